"""Login back-off per client: a few wrong passwords are free, then each further attempt must
wait twice as long as the one before (1 s, 2 s, 4 s ... up to ``max_wait_s``). A right
password resets the client. Clients are told how long to wait (HTTP 429, Retry-After).

A client is its address. Behind the nginx of ``deploy/nginx`` every request comes from the proxy's
address, so one stranger's wrong passwords would lock everyone out; that nginx appends the address it
saw to ``X-Forwarded-For`` (and sets ``X-Real-IP`` to it), and ``client_key`` believes those headers
only from the proxies the operator names (``--trusted-proxies`` / ``CODEC_TRUSTED_PROXIES``, empty by
default; the replicas' supervisord config sets 127.0.0.1): a client talking to the app directly, or
through some other local proxy that passes the headers on, cannot pick its own key, and what a client
writes into X-Forwarded-For itself stands left of what the trusted proxy appended, so it is never
read. The same key counts the shared tests' limits (``webui.serving.shared_test_routes``)."""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 5  # wrong passwords allowed before the back-off starts
FIRST_WAIT_S = 1.0  # wait after the first failure past the free ones; doubles each time
MAX_WAIT_S = 300.0  # longest wait between two attempts
FORGET_AFTER_S = 3600.0  # a client quiet this long starts afresh
MAX_CLIENTS = 10_000  # clients remembered at once (the oldest are forgotten first)
LOOPBACK = frozenset({"127.0.0.1", "::1"})  # what deploy/nginx's replicas set as --trusted-proxies


def trusted_set(text: str) -> frozenset[str]:
    """The ``--trusted-proxies`` setting ("127.0.0.1, ::1") as addresses in one spelling each."""
    out = set()
    for part in (text or "").replace(" ", ",").split(","):
        if part:
            out.add(str(ipaddress.ip_address(part)))  # ValueError for anything that is not an address
    return frozenset(out)


def client_key(scope, trusted: frozenset[str] = frozenset()) -> str:
    """The address a request comes from: the peer's; from a trusted proxy (``trusted``: the operator's
    ``--trusted-proxies``; none by default), the first address of X-Forwarded-For, read from the right
    (each proxy appends the one it saw), that is no trusted proxy, else the one X-Real-IP names."""
    peer = (scope.get("client") or ("?", 0))[0]
    if peer not in trusted:
        return peer
    headers = scope.get("headers") or ()
    forwarded = b",".join(v for k, v in headers if k == b"x-forwarded-for").decode("latin-1")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    client = peer
    for hop in reversed(hops):
        try:
            client = str(ipaddress.ip_address(hop))
        except ValueError:  # not an address: no trusted proxy wrote it, so nothing left of it is read
            return client
        if client not in trusted:
            return client
    if hops:  # every hop a trusted proxy: the farthest one is the client
        return client
    named = next((v for k, v in headers if k == b"x-real-ip"), b"").decode("latin-1").strip()
    try:
        return str(ipaddress.ip_address(named))
    except ValueError:  # no header (a direct local client) or not an address: the peer itself
        return peer


@dataclass
class _Client:
    failures: int = 0
    last_failure: float = 0.0


class LoginThrottle:
    """Failures per client key (the peer's address); thread-safe; memory bounded."""

    def __init__(
        self,
        free_failures: int = FREE_FAILURES,
        first_wait_s: float = FIRST_WAIT_S,
        max_wait_s: float = MAX_WAIT_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.free_failures = free_failures
        self.first_wait_s = first_wait_s
        self.max_wait_s = max_wait_s
        self._clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._lock = threading.Lock()

    def _wait_after(self, failures: int) -> float:
        extra = failures - self.free_failures
        if extra < 0:
            return 0.0
        return min(self.first_wait_s * 2.0**extra, self.max_wait_s)

    def retry_after_s(self, key: str) -> float:
        """Seconds ``key`` must still wait before its next attempt (0: go ahead)."""
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                return 0.0
            now = self._clock()
            if now - client.last_failure > FORGET_AFTER_S:
                del self._clients[key]
                return 0.0
            return max(0.0, client.last_failure + self._wait_after(client.failures) - now)

    def failed(self, key: str) -> None:
        with self._lock:
            client = self._clients.pop(key, None) or _Client()
            client.failures += 1
            client.last_failure = self._clock()
            self._clients[key] = client  # most recent last
            while len(self._clients) > MAX_CLIENTS:
                self._clients.popitem(last=False)

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._clients.pop(key, None)


def retry_after_header(seconds: float) -> str:
    """Retry-After takes whole seconds; round up so a client that obeys is let in."""
    return str(max(1, math.ceil(seconds)))
