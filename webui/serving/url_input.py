"""Audio from a URL, off unless the server is started with ``--enable-url-input``.

The rules, checked before any byte is sent:

* only ``http://`` and ``https://`` URLs, without user names or passwords in them;
* the host is resolved here, and refused if *any* of its addresses is private, loopback,
  link-local, multicast, reserved or unspecified (so the server cannot be used to reach
  machines behind its firewall or a cloud metadata service);
* the connection goes to the addresses that were checked, in the resolver's order of
  preference, the next one tried when one cannot be reached (no second DNS lookup that
  could answer differently); redirects are followed by hand, at most ``MAX_REDIRECTS``,
  each target checked again;
* the download is capped in size (Content-Length is checked first, then the bytes are
  counted) and in time: per socket operation and overall, the overall limit enforced by a
  watchdog that shuts the socket, so a server trickling bytes (or header lines) cannot hold
  the request open; the file lands in the request's own folder before the audio decoder
  ever sees it.
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from core import __version__
from core.errors import AudioInputError
from core.names import safe_name
from core.units import MIB
from webui.i18n import TranslatedError, text

logger = logging.getLogger(__name__)

SCHEMES = {"http": 80, "https": 443}  # scheme -> default port
DEFAULT_MAX_MB = 50.0  # MiB, largest download accepted
DEFAULT_TIMEOUT_S = 20.0  # seconds for the whole download
MAX_REDIRECTS = 3  # redirects followed, each re-checked
CHUNK_BYTES = 1 << 16  # bytes read at a time
URL_NAME_CHARS = 80  # longest local file name taken from a URL
USER_AGENT = f"codec-workbench/{__version__} (audio fetch)"  # i18n-exempt: sent to servers, never shown
_BROADCAST = ipaddress.IPv4Address("255.255.255.255")  # limited broadcast
_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")  # RFC 1122 "this network"


class UrlInputError(TranslatedError, AudioInputError):
    """A URL that is not fetched, and why: an AudioInputError (English ``str()``) that the page
    shows in the user's language by its catalogue key (``url.error.*``)."""


@dataclass(frozen=True)
class UrlPolicy:
    max_bytes: int = int(DEFAULT_MAX_MB * MIB)  # largest download
    timeout_s: float = DEFAULT_TIMEOUT_S  # whole download, seconds
    allow_loopback: bool = False  # tests only: lets a test serve files from 127.0.0.1


@dataclass(frozen=True)
class Target:
    scheme: str  # "http" or "https"
    host: str  # host name as written in the URL
    port: int  # explicit or the scheme's default
    path: str  # path and query, at least "/"
    address: str  # the checked IP address to connect to first
    addresses: tuple[str, ...] = ()  # every checked address, in the resolver's order (address first)


def parse_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path) of an http(s) URL, or AudioInputError saying why not."""
    url = (url or "").strip()
    if not url:
        raise UrlInputError("url.error.empty")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise UrlInputError("url.error.invalid", url=repr(url), reason=e) from e
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        scheme_field = {"scheme": scheme} if scheme else {"scheme_key": "url.no_scheme"}
        raise UrlInputError("url.error.scheme", **scheme_field)
    if parts.username is not None or parts.password is not None:
        raise UrlInputError("url.error.credentials")
    if not parts.hostname:
        raise UrlInputError("url.error.no_host", url=repr(url))
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, parts.hostname, port or SCHEMES[scheme], path


def blocked_reason(address: str, policy: UrlPolicy = UrlPolicy()) -> str | None:
    """Why ``address`` must not be fetched from (English), or None when it is a public address."""
    key = blocked_key(address, policy)
    return None if key is None else text(key)


def blocked_key(address: str, policy: UrlPolicy = UrlPolicy()) -> str | None:
    """The catalogue key (``url.reason.*``) of why ``address`` must not be fetched from, or None."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
    if ip.is_loopback:
        return None if policy.allow_loopback else "url.reason.loopback"
    # Before "private": Python counts 0.0.0.0/8 and 255.255.255.255 as private networks,
    # which would name the wrong cause.
    if ip.is_unspecified:
        return "url.reason.unspecified"
    if ip == _BROADCAST:
        return "url.reason.broadcast"
    if ip in _THIS_NETWORK:
        return "url.reason.this_network"
    for attribute in ("is_link_local", "is_private", "is_multicast", "is_reserved"):
        if getattr(ip, attribute):
            return "url.reason." + attribute.removeprefix("is_")
    if not ip.is_global:
        return "url.reason.not_global"
    return None


def resolve_all(host: str, port: int, policy: UrlPolicy = UrlPolicy(), resolver=socket.getaddrinfo) -> tuple[str, ...]:
    """Every address of ``host``, in the resolver's order of preference (RFC 6724: not
    sorted, which would put IPv6 first on machines without an IPv6 route); refuse when any
    of them is not public."""
    try:
        infos = resolver(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise UrlInputError("url.error.unresolved", host=repr(host), reason=e) from e
    addresses = tuple(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise UrlInputError("url.error.no_addresses", host=repr(host))
    for address in addresses:
        reason = blocked_key(address, policy)
        if reason:
            raise UrlInputError("url.error.blocked", host=host, address=address, reason_key=reason)
    return addresses


def check(url: str, policy: UrlPolicy = UrlPolicy(), resolver=socket.getaddrinfo) -> Target:
    """Every check that happens before a connection is opened."""
    scheme, host, port, path = parse_url(url)
    addresses = resolve_all(host, port, policy, resolver)
    return Target(scheme, host, port, path, addresses[0], addresses)


def fetch(url: str, folder: Path, policy: UrlPolicy = UrlPolicy(), resolver=socket.getaddrinfo) -> Path:
    """Download ``url`` into ``folder`` under the rules above; return the file's path."""
    deadline = time.monotonic() + policy.timeout_s
    for _ in range(MAX_REDIRECTS + 1):
        target = check(url, policy, resolver)
        connection = _connect(target, deadline, _remaining(deadline, url))
        try:
            response = _get(connection, target, url, deadline)
            if response.status in (301, 302, 303, 307, 308) and response.getheader("Location"):
                url = urljoin(url, response.getheader("Location"))
                logger.info("following redirect to %s", url)
                continue
            if response.status != 200:
                raise UrlInputError("url.error.status", status=response.status, reason=response.reason, url=url)
            return _save(response, folder / _file_name(target.path), policy, deadline, url)
        except AudioInputError:
            raise
        except (OSError, http.client.HTTPException) as e:  # the watchdog shut the socket mid-read
            _remaining(deadline, url)
            raise UrlInputError("url.error.fetch", url=url, reason=e) from e
        finally:
            connection.close()
            connection.disarm()
    raise UrlInputError("url.error.redirects", url=url, limit=MAX_REDIRECTS)


def _remaining(deadline: float, url: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise UrlInputError("url.error.too_long", url=url)
    return left


class _Pinned:
    """Connects to the checked addresses only (in order, the next one when one cannot be
    reached), and shuts the socket when the whole download's deadline passes: the socket
    timeout alone bounds each read, not a server that trickles a byte at a time."""

    host: str  # these three come from the http.client connection class it is mixed into
    port: int
    timeout: float | None

    def _pin(self, addresses: tuple[str, ...], deadline: float) -> None:
        self._addresses = addresses
        self._deadline = deadline
        self._watchdog: threading.Timer | None = None

    def _open_socket(self) -> socket.socket:
        error: OSError | None = None
        for address in self._addresses:
            left = self._deadline - time.monotonic()
            if left <= 0:
                break
            try:
                sock = socket.create_connection((address, self.port), min(self.timeout or left, left))
            except OSError as e:
                logger.info("cannot reach %s at %s (%s); trying the next address", self.host, address, e)
                error = e
                continue
            self._watchdog = threading.Timer(max(self._deadline - time.monotonic(), 0.0), _shut, (sock,))
            self._watchdog.daemon = True
            self._watchdog.start()
            return sock
        # i18n-exempt: reaches the page only as the English detail of url.error.fetch
        raise error or TimeoutError("time limit reached before connecting")

    def disarm(self) -> None:
        """Stop the watchdog; only once the download is over. Not in ``close()``: for a
        response without a length (close-delimited, HTTP/1.0) ``getresponse()`` closes the
        connection object while the response goes on reading the socket."""
        if self._watchdog is not None:
            self._watchdog.cancel()


def _shut(sock: socket.socket) -> None:
    """Wake a read blocked on ``sock`` (the caller sees an error and checks the deadline)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's, also under TLS
    except OSError:
        pass


class _PinnedHTTPSConnection(_Pinned, http.client.HTTPSConnection):
    """HTTPS to fixed, already checked addresses, with the certificate checked for the host."""

    def __init__(self, host, port, addresses, deadline, timeout):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._pin(addresses, deadline)

    def connect(self):
        self.sock = self._context.wrap_socket(self._open_socket(), server_hostname=self.host)


class _PinnedHTTPConnection(_Pinned, http.client.HTTPConnection):
    def __init__(self, host, port, addresses, deadline, timeout):
        super().__init__(host, port, timeout=timeout)
        self._pin(addresses, deadline)

    def connect(self):
        self.sock = self._open_socket()


def _connect(target: Target, deadline: float, timeout: float) -> _PinnedHTTPConnection | _PinnedHTTPSConnection:
    cls = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    return cls(target.host, target.port, target.addresses or (target.address,), deadline, timeout)


def _get(connection, target: Target, url: str, deadline: float) -> http.client.HTTPResponse:
    try:
        connection.request("GET", target.path, headers={"User-Agent": USER_AGENT, "Accept": "audio/*, */*"})
        return connection.getresponse()
    except (OSError, http.client.HTTPException) as e:
        _remaining(deadline, url)  # past the deadline: say so, not "could not fetch"
        raise UrlInputError("url.error.fetch", url=url, reason=e) from e


def _save(response, path: Path, policy: UrlPolicy, deadline: float, url: str) -> Path:
    limit_mb = policy.max_bytes / MIB
    declared = response.getheader("Content-Length")
    if declared and declared.isdigit() and int(declared) > policy.max_bytes:
        raise UrlInputError("url.error.too_big", url=url, limit=f"{limit_mb:.3g}")
    received = 0
    with open(path, "xb") as out:
        try:
            while chunk := _read(response, url, deadline):
                received += len(chunk)
                if received > policy.max_bytes:
                    raise UrlInputError("url.error.too_big", url=url, limit=f"{limit_mb:.3g}")
                out.write(chunk)
                _remaining(deadline, url)
            _remaining(deadline, url)  # an end of file may be the watchdog's shutdown
        except BaseException:
            out.close()
            path.unlink(missing_ok=True)  # no partial file left behind
            raise
    if received == 0:
        path.unlink(missing_ok=True)
        raise UrlInputError("url.error.empty_file", url=url)
    logger.info("fetched %d bytes from %s", received, url)
    return path


def _read(response, url: str, deadline: float) -> bytes:
    try:
        return response.read(CHUNK_BYTES)
    except (OSError, http.client.HTTPException) as e:
        _remaining(deadline, url)  # the watchdog shut the socket: say it took too long
        raise UrlInputError("url.error.broke_off", url=url, reason=e) from e


def _file_name(path: str) -> str:
    """A safe local name from the URL's last path segment."""
    last = path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return safe_name(last, "url-audio", max_chars=URL_NAME_CHARS)
