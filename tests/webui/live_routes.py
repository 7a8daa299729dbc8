"""/live/ws without a browser: an engine loaded on the tiny checkpoint with its live slots, and a
starlette ``TestClient`` for a bare app that serves only the live route (``webui.serving.live_socket``),
for the route's tests (test_live_socket, test_live_failures, test_live_limits, test_origins). The
fixtures ``one_slot`` and ``live_app`` are imported by the tests that use them."""

from __future__ import annotations

import pytest
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


@pytest.fixture(scope="module")
def one_slot(tiny_checkpoint):
    """An engine with one live slot (one per test module)."""
    return live_engine(tiny_checkpoint, sessions=1)


@pytest.fixture
def live_app(one_slot, tmp_path):
    """(client, engine, workspace): the route on a bare app (no login unless a test sets one), one live
    slot; every session is closed when the test ends."""
    workspace = Workspace(tmp_path / "work")
    yield live_client(one_slot, workspace), one_slot, workspace
    assert one_slot.live.in_use == 0
