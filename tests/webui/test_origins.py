"""Issue 31, finding 3: origins are compared whole (scheme, host, port) against the page's own origin,
with ``--public-origin`` for the origin behind a proxy; the same rule for the Live WebSocket and for
every state-changing request the guard sees. Host names alone were compared before:
``http://127.0.0.1:9999``, ``https://127.0.0.1:1`` and ``HTTP://127.0.0.1`` opened ``/live/ws``."""

from __future__ import annotations

import json

import pytest
from starlette.responses import PlainTextResponse
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from tests.webui import live_routes
from webui.serving.guard import Guard
from webui.serving.origins import OriginPolicy, parse, parse_list
from webui.serving.workspace import Workspace

one_slot = live_routes.one_slot  # the route's fixtures (tests/webui/live_routes.py)

FOREIGN = ["http://testserver:9999", "https://testserver", "HTTP://testserver:1", "null", "http://evil.example"]
PUBLIC = "https://codec.example.org"


@pytest.fixture
def live(one_slot, tmp_path):
    policy = OriginPolicy(public=parse_list(PUBLIC))
    return live_routes.live_client(one_slot, Workspace(tmp_path / "w"), origins=policy)


@pytest.mark.parametrize("origin", FOREIGN)
def test_a_live_socket_from_another_origin_is_refused(live, origin):
    with pytest.raises(WebSocketDisconnect) as refused:
        with live.websocket_connect("/live/ws?rate=48000", headers={"origin": origin}) as ws:
            ws.receive_text()
    assert refused.value.code == 4403


@pytest.mark.parametrize("origin", ["http://testserver", "http://TESTSERVER:80", PUBLIC, None])
def test_the_apps_own_origin_the_public_one_and_no_browser_are_let_in(live, origin):
    headers = {"origin": origin} if origin else {}
    with live.websocket_connect("/live/ws?rate=48000", headers=headers) as ws:
        assert json.loads(ws.receive_text())["type"] == "ready"


@pytest.fixture
def guarded(tmp_path):
    async def app(scope, receive, send):
        await PlainTextResponse("reached")(scope, receive, send)

    return TestClient(Guard(app, temp_root=tmp_path / "t", origins=OriginPolicy(public=parse_list(PUBLIC))))


@pytest.mark.parametrize("origin", FOREIGN)
@pytest.mark.parametrize("path", ["/gradio_api/queue/join", "/login", "/gradio_api/upload", "/gradio_api/cancel"])
def test_a_state_changing_request_from_another_origin_is_refused(guarded, origin, path):
    answer = guarded.post(path, content=b"{}", headers={"origin": origin, "content-type": "application/json"})
    assert answer.status_code == 403 and "another site" in answer.json()["error"]


@pytest.mark.parametrize("origin", ["http://testserver", PUBLIC])
def test_a_state_changing_request_from_our_origin_goes_through(guarded, origin):
    answer = guarded.post("/anything", content=b"{}", headers={"origin": origin, "content-type": "application/json"})
    assert answer.status_code == 200 and answer.text == "reached"


def test_behind_a_trusted_proxy_its_forwarded_scheme_and_host_name_our_origin():
    scope = {
        "scheme": "http",
        "client": ("127.0.0.1", 5),
        "headers": [
            (b"host", b"127.0.0.1:7801"),
            (b"origin", b"https://codec.example.org"),
            (b"x-forwarded-proto", b"https"),
            (b"x-forwarded-host", b"codec.example.org"),
        ],
    }
    assert OriginPolicy(trusted=frozenset({"127.0.0.1"})).allows(scope)
    assert not OriginPolicy().allows(scope)  # an untrusted peer cannot name its own origin
    assert parse("https://[::1]:8443") == ("https", "[::1]", 8443) and parse("ftp://x") is None
    with pytest.raises(ValueError):
        parse_list("codec.example.org")
