"""Serve the app: Gradio's own server, with /health and /ready on the same port.

The health routes are built by ``webui.serving.health.add_health_routes`` on a plain FastAPI app
and handed to Gradio's app at creation (``app_kwargs={"routes": ...}``), so they answer
from the first request on, outside the UI's login (a supervisor can poll them). The
hardening (``webui.serving.guard`` middleware, ``webui.serving.timeouts`` for slow clients) goes in the same
way; see docs/webui.md, "Hardening".
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.middleware import Middleware

from core.listening.shared_test_store import store_for
from core.settings import DEFAULT_HOST, DEFAULT_PORT
from webui.app import CSS
from webui.i18n import gradio_i18n
from webui.options import ASSETS, UiOptions
from webui.serving import peers, timeouts
from webui.serving.decode_route import decode_routes
from webui.serving.guard import Guard
from webui.serving.health import add_health_routes
from webui.serving.limits import ClientLimits, LimitSettings
from webui.serving.live_socket import live_routes
from webui.serving.origins import Origin, OriginPolicy
from webui.serving.report_route import report_routes
from webui.serving.shared_test_routes import shared_test_routes
from webui.serving.workspace import Workspace

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerOptions:
    host: str = DEFAULT_HOST  # interface to bind
    port: int = DEFAULT_PORT  # TCP port (0: let Gradio pick a free one from 7860 up)
    auth: tuple[str, str] | None = None  # (user, password) from the environment, never from code
    max_file_bytes: int | None = None  # uploads larger than this are refused by Gradio itself
    quiet: bool = True  # Gradio's own startup banner
    limits: LimitSettings = field(default_factory=LimitSettings)  # per-client limits (webui.serving.limits)
    trusted_proxies: frozenset[str] = frozenset()  # proxies whose X-Real-IP names the client
    public_origins: frozenset[Origin] = frozenset()  # where the page is served behind a proxy (--public-origin)

    def origins(self) -> OriginPolicy:
        """Which pages may open a WebSocket or change state (``webui.serving.origins``)."""
        return OriginPolicy(public=self.public_origins, trusted=self.trusted_proxies)


def health_routes(engine, started_at: float, temp_root: Path | None = None) -> list[APIRoute]:
    """The /health and /ready routes, as routes to hand to Gradio's FastAPI app."""
    app = FastAPI()
    add_health_routes(app, engine, started_at, temp_root)
    return [route for route in app.routes if isinstance(route, APIRoute)]


def launch(demo: gr.Blocks, engine, ui: UiOptions, server: ServerOptions, started_at: float | None = None):
    """Start serving without blocking; return (fastapi_app, local_url)."""
    started_at = started_at or time.time()
    limits = ClientLimits(server.limits)  # one count per client for the queue and the Live socket
    demo.queue(default_concurrency_limit=1, api_open=False)  # /run/<name> would skip the queue and its limits
    app, url, _ = demo.launch(
        server_name=server.host,
        server_port=server.port or None,
        auth=server.auth,
        # i18n-exempt: Gradio shows it on its own login page, before any of our catalogues apply
        auth_message="Codec Workbench: sign in with the user name and password the operator gave you.",
        prevent_thread_lock=True,
        quiet=server.quiet,
        show_error=True,
        max_file_size=server.max_file_bytes,
        allowed_paths=[str(ui.temp_root), str(ASSETS)],
        app_kwargs={
            "routes": [
                *health_routes(engine, started_at, ui.temp_root),
                *report_routes(ui.temp_root),  # the report page opens in the browser
                *live_routes(  # the Live tab's audio
                    engine, Workspace(ui.temp_root, ui.max_age_s, ui.max_temp_bytes), server.origins(), limits
                ),
                *decode_routes(engine, server.origins(), limits),  # /decode/ws: codes in, PCM out (TTS servers)
                *shared_test_routes(store_for(engine.settings), server.trusted_proxies),  # shared tests: /listen/<link>
            ],
            "middleware": [
                Middleware(
                    Guard,
                    temp_root=ui.temp_root,
                    serve_roots=(ASSETS,),
                    max_temp_bytes=ui.max_temp_bytes,
                    limits=limits,
                    trusted_proxies=server.trusted_proxies,
                    origins=server.origins(),
                )
            ],
            "openapi_url": None,  # FastAPI's schema of Gradio's internals; the API is documented at /gradio_api/info
        },
        footer_links=["api", "settings"],
        ssr_mode=False,
        css=CSS,
        i18n=gradio_i18n(),  # the catalogues the page translates its labels with (webui/i18n.py)
        theme=gr.themes.Soft(),
    )
    timeouts.install(demo.server)
    peers.install(demo.server)  # the client is the TCP peer unless --trusted-proxies names it
    logger.info("serving at %s (health at %shealth)", url, url)
    return app, url
