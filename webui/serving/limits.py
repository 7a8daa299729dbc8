"""Per-client limits on work, enforced where events enter Gradio's queue (the guard calls
:meth:`ClientLimits.admit` for every ``/gradio_api/queue/join`` and ``/gradio_api/call/<name>``), so
one rule covers every endpoint, present and future:

- **Jobs at once**: a client may have at most ``jobs`` events of one concurrency group queued or
  running (``model_jobs`` for the model's queue); more are refused at once (429), so one client
  cannot fill a queue that others wait in (60 ``/doctor`` calls in 0.3 s held another user's round
  trip for 26.6 s). Counted from Gradio's own queue, so nothing can leak.
- **Rate**: at most ``starts_per_min`` events that do work (any group but status and stats) and
  ``calls_per_min`` events of any kind per client per minute (token buckets: a burst of half that).
- **Unread results**: ``/gradio_api/call/<name>`` keeps each result in memory until its
  ``GET /gradio_api/call/<name>/<event_id>`` reads it; Gradio never forgets an unread one (10,000
  unread ``/status`` calls took 2.8 GB). A client may leave at most ``unread`` results unread; after
  ``unread_ttl_s`` an unread result is dropped from Gradio's records.
- **Per-call sessions**: each ``/gradio_api/call`` event is a session of its own in Gradio, with a
  copy of the whole page's configuration (about 0.3 MB here), kept until 10,000 sessions exist: an
  API client's calls grew the server by gigabytes. Once a call's result has been read (or dropped
  unread), :func:`forget_call` removes its session and records.

- **Live sessions at once**: a client may hold at most ``live_sessions`` ``/live/ws`` sockets
  (default 1), and opening one counts as a job start in the rate above (no single
  client holds every live slot with trickling sockets). The socket asks :meth:`ClientLimits.open_live`.
- **Decode streams at once**: the same for ``/decode/ws`` with ``--client-decode-streams``
  (:meth:`ClientLimits.open_decode`).

A client is its address (``throttle.client_key``: the peer, or the client a trusted proxy names).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from webui.serving.throttle import client_key

logger = logging.getLogger(__name__)

CHEAP_GROUPS = frozenset({"status", "stats"})  # reads that do no work (webui.queues): only calls_per_min counts them
UNMETERED_GROUPS = frozenset({"abx"})  # blind-test answers: no model; capped at once, not in starts_per_min
# (a listener answering quickly must never meet a "too many requests")
MODEL_GROUP_ID = "model"  # webui.queues.MODEL_GROUP's concurrency id
MAX_CLIENTS = 10_000  # clients remembered at once (the oldest are forgotten first)


@dataclass(frozen=True)
class LimitSettings:
    model_jobs: int = 2  # model-queue events one client may have queued or running
    jobs: int = 4  # events of any other group one client may have queued or running
    starts_per_min: float = 120.0  # events that do work, per client per minute (a round trip's page: about 8)
    calls_per_min: float = 600.0  # events of any kind, per client per minute
    unread: int = 20  # /gradio_api/call results one client may leave unread
    unread_ttl_s: float = 600.0  # an unread result is dropped from Gradio's records after this
    live_sessions: int = 1  # /live/ws sockets one client may hold at once


@dataclass
class _Client:
    starts: float  # tokens left in the "work" bucket
    calls: float  # tokens left in the "any event" bucket
    at: float  # when the buckets were last filled
    unread: OrderedDict[str, float] = field(default_factory=OrderedDict)  # event id -> when it was made


@dataclass(frozen=True)
class Refusal:
    status: int  # HTTP status (429)
    text: str  # what the client should do
    retry_after_s: float | None = None


class ClientLimits:
    """The limits' state: buckets and unread results per client; thread-safe; memory bounded."""

    def __init__(self, settings: LimitSettings | None = None, clock: Callable[[], float] = time.monotonic):
        self.settings = settings or LimitSettings()
        self._clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._joining: dict[tuple[str, str], int] = {}  # (client, group) -> joins admitted, not yet in the queue
        self._live: dict[str, int] = {}  # client -> live sockets open
        self._decode: dict[str, int] = {}  # client -> /decode/ws sockets open
        self._lock = threading.Lock()

    def _client(self, key: str, now: float) -> _Client:
        s = self.settings
        client = self._clients.pop(key, None) or _Client(s.starts_per_min / 2, s.calls_per_min / 2, now)
        elapsed = max(now - client.at, 0.0)
        client.starts = min(s.starts_per_min / 2, client.starts + elapsed * s.starts_per_min / 60)
        client.calls = min(s.calls_per_min / 2, client.calls + elapsed * s.calls_per_min / 60)
        client.at = now
        self._clients[key] = client
        while len(self._clients) > MAX_CLIENTS:
            self._clients.popitem(last=False)
        return client

    def admit(self, scope, fn, queue, trusted: frozenset[str], simple_call: bool) -> Refusal | tuple[str, str]:
        """Why the client may not add an event of ``fn`` to Gradio's ``queue`` now, or a ticket
        to hand to :meth:`joined` once the join has been answered (until then the event counts
        as the client's, so joins that race each other cannot pass the cap together).
        ``simple_call``: it comes through ``/gradio_api/call/<name>`` (its result waits to be read)."""
        key = client_key(scope, trusted)
        group = getattr(fn, "concurrency_id", None) or "default"
        works = group not in CHEAP_GROUPS
        metered = works and group not in UNMETERED_GROUPS
        now = self._clock()
        with self._lock:
            client = self._client(key, now)
            self._expire_unread(client, queue, now)
            if simple_call and len(client.unread) >= self.settings.unread:
                return Refusal(
                    429,
                    f"You have {len(client.unread)} results not yet read; read them first "
                    "(GET /gradio_api/call/<name>/<event_id>), or wait a few minutes.",
                )
            if client.calls < 1 or (metered and client.starts < 1):
                per_min = self.settings.starts_per_min if metered else self.settings.calls_per_min
                wait = (1 - min(client.starts if metered else client.calls, 1)) * 60 / per_min
                return Refusal(429, f"Too many requests from your address; wait {math.ceil(wait)} s.", wait)
            if works:
                cap = self.settings.model_jobs if group == MODEL_GROUP_ID else self.settings.jobs
                held = _jobs_of(queue, key, group, trusted) + self._joining.get((key, group), 0)
                if held >= cap:
                    return Refusal(
                        429,
                        f"You already have {held} job(s) waiting or running here; wait for them to finish "
                        "before starting another.",
                    )
                if metered:
                    client.starts -= 1
            client.calls -= 1
            self._joining[(key, group)] = self._joining.get((key, group), 0) + 1
        return key, group

    def open_live(self, scope, trusted: frozenset[str]) -> Refusal | str:
        """A live socket's admission: a refusal (the client holds ``live_sessions`` sockets already,
        or is over its rate), or a ticket to hand to :meth:`close_live` when the socket ends."""
        return self._open_socket(self._live, "live sessions", self.settings.live_sessions, scope, trusted)

    def close_live(self, ticket: str) -> None:
        self._close_socket(self._live, ticket)

    def open_decode(self, scope, trusted: frozenset[str], cap: int) -> Refusal | str:
        """A ``/decode/ws`` socket's admission, as :meth:`open_live` with ``cap`` sockets per client
        (``--client-decode-streams``); hand the ticket to :meth:`close_decode`."""
        return self._open_socket(self._decode, "decode streams", cap, scope, trusted)

    def close_decode(self, ticket: str) -> None:
        self._close_socket(self._decode, ticket)

    def _open_socket(self, held_by: dict[str, int], what: str, cap: int, scope, trusted) -> Refusal | str:
        key = client_key(scope, trusted)
        with self._lock:
            client = self._client(key, self._clock())
            held = held_by.get(key, 0)
            if held >= cap:
                return Refusal(429, f"{what}: {held} of {cap}")
            if client.calls < 1 or client.starts < 1:
                wait = 60 / self.settings.starts_per_min
                return Refusal(429, f"Too many requests from your address; wait {math.ceil(wait)} s.", wait)
            client.starts -= 1
            client.calls -= 1
            held_by[key] = held + 1
        return key

    def _close_socket(self, held_by: dict[str, int], ticket: str) -> None:
        with self._lock:
            left = held_by.get(ticket, 0) - 1
            if left > 0:
                held_by[ticket] = left
            else:
                held_by.pop(ticket, None)

    def joined(self, ticket: tuple[str, str]) -> None:
        """The join of an admitted event was answered: it is in Gradio's queue now (or was refused)."""
        with self._lock:
            left = self._joining.get(ticket, 0) - 1
            if left > 0:
                self._joining[ticket] = left
            else:
                self._joining.pop(ticket, None)

    def made(self, scope, event_id: str, trusted: frozenset[str]) -> None:
        """A ``/gradio_api/call`` event was queued: its result is unread until :meth:`read`."""
        with self._lock:
            self._client(client_key(scope, trusted), self._clock()).unread[event_id] = self._clock()

    def read(self, scope, event_id: str, trusted: frozenset[str]) -> None:
        with self._lock:
            client = self._clients.get(client_key(scope, trusted))
            if client is not None:
                client.unread.pop(event_id, None)

    def _expire_unread(self, client: _Client, queue, now: float) -> None:
        while client.unread:
            event_id, made = next(iter(client.unread.items()))
            if now - made < self.settings.unread_ttl_s:
                break
            del client.unread[event_id]
            forget_call(getattr(queue, "blocks", None), event_id, queue)


def _jobs_of(queue, key: str, group: str, trusted: frozenset[str]) -> int:
    """Events of ``group`` from client ``key`` waiting in or running from Gradio's queue."""
    events = list(getattr(queue.event_queue_per_concurrency_id.get(group), "queue", []) or [])
    events += [e for job in queue.active_jobs if job for e in job if e.fn.concurrency_id == group]
    return sum(1 for e in events if client_key(e.request.scope, trusted) == key)


def forget_call(blocks, event_id: str, queue=None) -> bool:
    """Drop what Gradio keeps of a finished ``/gradio_api/call`` event: its queue records and its
    session (for a simple call the session is the event itself, used by nobody else). False when
    the event is still waiting or running (its result can be sent before its job leaves Gradio's
    list of running jobs): nothing is dropped then, and the caller tries again a moment later."""
    queue = queue if queue is not None else getattr(blocks, "_queue", None)
    if queue is not None and not _forget_event(queue, event_id):
        return False
    holder = getattr(blocks, "state_holder", None)
    sessions = getattr(holder, "session_data", None)
    if holder is not None and isinstance(sessions, dict):
        with holder.lock:
            sessions.pop(event_id, None)
            getattr(holder, "time_last_used", {}).pop(event_id, None)
    return True


def _forget_event(queue, event_id: str) -> bool:
    """Drop what Gradio keeps of a finished ``/call`` event nobody read (its result, its record);
    for a simple call the session is the event itself. An event still waiting or running is kept
    (False)."""
    waiting = [e for q in queue.event_queue_per_concurrency_id.values() for e in q.queue]
    running = [e for job in queue.active_jobs if job for e in job]
    if any(e._id == event_id for e in waiting + running):
        return False
    for name in ("pending_messages_per_session", "pending_event_ids_session", "event_ids_to_events", "event_analytics"):
        records = getattr(queue, name, None)
        if isinstance(records, dict):
            records.pop(event_id, None)
    return True
