"""Which pages may open a WebSocket or send a state-changing request: the app's own origin, compared
whole (scheme, host and port, as browsers compare them), or one the operator names as the public
origin behind a proxy (``--public-origin``).

A browser names the page that opens a WebSocket or posts a request in ``Origin``. Cookies are not
bound to a port, so with a login set a page on another port of the same host (any local program
serving HTML) would otherwise ride the visitor's cookie: comparing host names alone let
``http://127.0.0.1:9999`` open ``/live/ws``. A request without ``Origin``
comes from no browser page (curl, ``gradio_client``) and is let through: it carries no visitor's
cookie it did not set itself.

The page's own origin is the request's scheme and ``Host`` header; a trusted proxy
(``--trusted-proxies``) may name the scheme and host the browser used in ``X-Forwarded-Proto`` and
``X-Forwarded-Host`` (deploy/nginx sends the ``Host`` the browser sent, port included).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
SECURE = {"https": "https", "wss": "https", "http": "http", "ws": "http"}  # the page scheme a request's scheme means

Origin = tuple[str, str, int]  # scheme, host (lower case; IPv6 in brackets), port


def parse(text: str) -> Origin | None:
    """``scheme://host[:port]`` as a browser sends it, or None when it is not an http(s) origin."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.query:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme]


def parse_list(text: str) -> frozenset[Origin]:
    """The ``--public-origin`` setting ("https://codec.example.org, http://10.0.0.5:7860")."""
    out = set()
    for item in text.split(","):
        if not item.strip():
            continue
        origin = parse(item)
        if origin is None:
            # i18n-exempt: a startup settings error (the CLI's English), never shown on the page
            raise ValueError(f"{item.strip()!r} is not an origin like https://codec.example.org")
        out.add(origin)
    return frozenset(out)


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key == name:
            return value.decode("latin-1")
    return ""


def own_origin(scope, trusted: frozenset[str] = frozenset()) -> Origin | None:
    """The origin the browser used to reach this request: its scheme and Host (or, from a trusted
    proxy, what that proxy names)."""
    scheme = SECURE.get(str(scope.get("scheme", "http")).lower(), "http")
    host = _header(scope, b"host")
    peer = (scope.get("client") or ("?", 0))[0]
    if peer in trusted:
        scheme = SECURE.get(_header(scope, b"x-forwarded-proto").split(",")[0].strip().lower(), scheme)
        host = _header(scope, b"x-forwarded-host").split(",")[0].strip() or host
    return parse(f"{scheme}://{host}") if host else None


@dataclass(frozen=True)
class OriginPolicy:
    public: frozenset[Origin] = frozenset()  # the operator's --public-origin: where the page is served
    trusted: frozenset[str] = frozenset()  # proxies whose X-Forwarded-* headers are believed

    def allows(self, scope) -> bool:
        """True for a request with no Origin (not from a browser page) or one whose Origin is this
        app's own origin or a public origin the operator named, scheme, host and port all equal."""
        given = _header(scope, b"origin")
        if not given:
            return True
        origin = parse(given)  # "null" (a sandboxed page, a file://) is no origin of ours
        return origin is not None and (origin == own_origin(scope, self.trusted) or origin in self.public)

    def refusal(self, scope) -> str:
        """The log line of a refusal."""
        # i18n-exempt: a log line
        return f"Origin {_header(scope, b'origin')[:200]!r} is not this app's ({own_origin(scope, self.trusted)})"
