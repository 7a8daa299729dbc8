"""/live/ws without a browser: an engine loaded on the tiny checkpoint with its live slots, and a
starlette ``TestClient`` for a bare app that serves only the live route (``webui.serving.live_socket``),
for the route's tests (test_live_socket, test_live_failures, test_live_limits, test_origins)."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.testclient import TestClient

from core.model.engine import Engine
from core.settings import Settings
from webui.serving import live_socket
from webui.serving.limits import ClientLimits
from webui.serving.origins import OriginPolicy
from webui.serving.workspace import Workspace


def live_engine(checkpoint, sessions: int = 1) -> Engine:
    """A CPU engine on ``checkpoint`` with ``sessions`` live slots, loaded."""
    engine = Engine(Settings(model=str(checkpoint), device="cpu", live_sessions=sessions))
    assert engine.load(), engine.error
    return engine


def live_client(
    engine, workspace: Workspace, origins: OriginPolicy | None = None, limits: ClientLimits | None = None
) -> TestClient:
    """A client of a bare app with only ``/live/ws`` on ``engine`` (no login)."""
    app = FastAPI()
    app.router.routes.extend(live_socket.live_routes(engine, workspace, origins, limits))
    return TestClient(app)
