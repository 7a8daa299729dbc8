"""``/decode/ws`` on the app's own port: ``core.serving.decode_socket`` behind the page's rules.

The protocol is core's (``python -m core serve-decode`` serves the same socket without the page);
this module is its gate here: the login and the origin rule of every page route
(``webui.serving.guard.signed_in``, ``webui.serving.origins``), and the per-client count and rate of
``webui.serving.limits`` (``--client-decode-streams`` sockets per client, opening one counts as a job
start), on the same ``ClientLimits`` the queue and ``/live/ws`` use. Its sentences are the protocol's
(English: the socket is for programs; docs/stream-decode.md).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, WebSocket
from fastapi.routing import APIWebSocketRoute

from core.serving import decode_socket
from webui.serving.guard import signed_in
from webui.serving.limits import ClientLimits, Refusal
from webui.serving.origins import OriginPolicy
from webui.serving.throttle import client_key

logger = logging.getLogger(__name__)


class AppGate:
    """The app's :class:`core.serving.decode_socket.Gate` (see the module docstring)."""

    def __init__(self, origins: OriginPolicy, limits: ClientLimits, per_client: int):
        self.origins, self.limits, self.per_client = origins, limits, int(per_client)

    def allows(self, scope) -> bool:
        if not signed_in(scope):
            return False
        if not self.origins.allows(scope):  # another site could use a visitor's cookie
            logger.warning("refused a decode socket: %s", self.origins.refusal(scope))
            return False
        return True

    def open(self, scope) -> tuple[object | None, str | None]:
        ticket = self.limits.open_decode(scope, self.origins.trusted, self.per_client)
        if isinstance(ticket, Refusal):
            logger.warning("refused a decode socket from %s: %s", client_key(scope, self.origins.trusted), ticket.text)
            if ticket.retry_after_s is not None:
                return None, ticket.text
            return None, decode_socket.too_many_streams(self.per_client)
        return ticket, None

    def close(self, ticket: object) -> None:
        self.limits.close_decode(str(ticket))


def decode_routes(engine, origins: OriginPolicy, limits: ClientLimits) -> list[APIWebSocketRoute]:
    """The WebSocket route, to hand to Gradio's FastAPI app beside /live/ws."""
    app = FastAPI()
    gate = AppGate(origins, limits, engine.settings.client_decode_streams)

    @app.websocket(decode_socket.PATH)
    async def decode_ws(ws: WebSocket):
        await decode_socket.serve(ws, engine, gate)

    return [route for route in app.routes if isinstance(route, APIWebSocketRoute)]
