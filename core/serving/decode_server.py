"""``python -m core serve-decode --port N``: ``/decode/ws`` and ``/health`` without the page.

For a TTS server that wants the exact stream decoder on a machine of its own: one engine, one
Starlette app, uvicorn (WebSockets through wsproto). The socket is ``core.serving.decode_socket``'s,
with :class:`PeerGate`: no page is served here, so a request that a browser page makes (it carries an
``Origin`` header) is refused (code 4403), and each client address holds at most
``--client-decode-streams`` sockets. There is no login: bind it to a private interface (the default,
127.0.0.1) or put it behind one; the web app (``python -m webui``) serves the same socket at
``/decode/ws`` behind its login and origin rules.
"""

from __future__ import annotations

import logging
import threading

from core.serving import decode_socket

logger = logging.getLogger(__name__)


class PeerGate:
    """serve-decode's :class:`core.serving.decode_socket.Gate` (see the module docstring)."""

    def __init__(self, per_client: int):
        self.per_client = int(per_client)
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def allows(self, scope) -> bool:
        return not any(key == b"origin" for key, _ in scope.get("headers") or ())

    def open(self, scope) -> tuple[object | None, str | None]:
        key = str((scope.get("client") or ("?", 0))[0])
        with self._lock:
            held = self._held.get(key, 0)
            if held >= self.per_client:
                return None, decode_socket.too_many_streams(self.per_client)
            self._held[key] = held + 1
        return key, None

    def close(self, ticket: object) -> None:
        with self._lock:
            key = str(ticket)
            left = self._held.get(key, 0) - 1
            if left > 0:
                self._held[key] = left
            else:
                self._held.pop(key, None)


def build_app(engine):
    """The Starlette app: ``/decode/ws`` and ``/health`` on ``engine``."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route, WebSocketRoute

    gate = PeerGate(engine.settings.client_decode_streams)

    async def socket(ws):
        await decode_socket.serve(ws, engine, gate)

    async def health(_request):
        return JSONResponse(
            {
                "state": engine.state.value,
                "streams_in_use": engine.streams.in_use,
                "streams_limit": engine.streams.limit,
                "device": engine.device_label,
            }
        )

    return Starlette(routes=[WebSocketRoute(decode_socket.PATH, socket), Route("/health", health)])


def make_server(engine, host: str, port: int):
    """A uvicorn server for :func:`build_app` (``run()`` blocks; tests start it in a thread)."""
    import uvicorn

    config = uvicorn.Config(build_app(engine), host=host, port=port, ws="wsproto", log_level="warning", lifespan="off")
    return uvicorn.Server(config)
