"""``/decode/ws`` on the running app's own port (``webui.serving.decode_route``), over a real socket with
the Python client: the PCM equals the engine's decode; a foreign page's Origin is refused and the
app's own is let in; a client holds at most ``--client-decode-streams`` sockets; a bad message gets a
sentence while the client's other stream goes on."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import numpy as np
import pytest

from core.codec import NUM_CODEBOOKS
from core.serving.stream_client import StreamClient, StreamClientError


def snr_db(x: np.ndarray, ref: np.ndarray) -> float:
    assert x.shape == ref.shape, (x.shape, ref.shape)
    err = float(np.sum((x.astype(np.float64) - ref) ** 2))
    return float("inf") if err == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err))


@pytest.fixture(scope="module")
def socket_url(server):
    parts = urlsplit(server[0])
    return f"ws://{parts.netloc}/decode/ws", f"{parts.scheme}://{parts.netloc}"


def test_the_apps_socket_streams_the_whole_decode(engine, socket_url):
    url, own = socket_url
    codes = np.random.default_rng(4).integers(0, 2048, size=(23, NUM_CODEBOOKS))
    whole = engine.decode(codes).samples
    with StreamClient(url, format="float32", origin=own) as client:  # the app's own page may open it
        got = np.concatenate([client.push(codes[low : low + 4]) for low in range(0, 23, 4)] + [client.end()])
    assert snr_db(got, whole) >= 80.0


def test_a_foreign_page_is_refused(socket_url):
    url, _own = socket_url
    with pytest.raises(StreamClientError, match="HTTP 403|code 4403"):
        StreamClient(url, origin="http://127.0.0.1:9")


def test_a_client_holds_at_most_its_streams_and_a_bad_message_ends_only_its_own(engine, socket_url):
    url, _own = socket_url
    cap = engine.settings.client_decode_streams
    held = [StreamClient(url) for _ in range(cap)]
    try:
        with pytest.raises(StreamClientError, match=f"holds {cap} decode streams"):
            StreamClient(url)
        held[0].send_raw(b"\x01\x02\x03")
        with pytest.raises(StreamClientError, match="32 bytes a frame"):
            held[0].read_audio()
        assert held[1].push(np.zeros((2, NUM_CODEBOOKS), np.int64)).size == 2 * held[1].samples_per_frame
    finally:
        for client in held:
            client.close()


def test_a_missing_login_is_refused(engine):
    """With the app's login set, a socket without the session cookie is closed before anything opens."""
    from fastapi import FastAPI
    from starlette.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    from webui.serving.decode_route import decode_routes
    from webui.serving.limits import ClientLimits
    from webui.serving.origins import OriginPolicy

    app = FastAPI()
    app.router.routes.extend(decode_routes(engine, OriginPolicy(), ClientLimits()))
    client = TestClient(app)
    with client.websocket_connect("/decode/ws") as ws:  # no login: open
        assert json.loads(ws.receive_text())["type"] == "ready"
    client.app.auth, client.app.cookie_id, client.app.tokens = ("user", "pass"), "x", {}  # type: ignore[attr-defined]
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect("/decode/ws") as ws:
            ws.receive_text()
    assert refused.value.code == 4403
    assert engine.streams.in_use == 0
