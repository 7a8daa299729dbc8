"""/live/ws without a browser (starlette's TestClient against the route on a bare app): the protocol,
a stop that becomes a round-trip result, and every refusal (format, malformed block, busy, idle,
another site, no login). The browser test drives the same route from the real page."""

from __future__ import annotations

import dataclasses
import json
import struct

import numpy as np
import pytest
from starlette.websockets import WebSocketDisconnect

from tests.webui import live_routes
from webui.jobs import live
from webui.serving import live_socket
from webui.serving.limits import ClientLimits, LimitSettings

live_app, one_slot = live_routes.live_app, live_routes.one_slot  # the route's fixtures (tests/webui/live_routes.py)


def block(samples: np.ndarray, clock_ms: float = 1.0) -> bytes:
    return struct.pack("<d", clock_ms) + samples.astype("<f4").tobytes()


def test_blocks_in_frames_out_then_stop_gives_a_round_trip_result(live_app, speech):
    client, engine, workspace = live_app
    x = np.repeat(speech(1.0, seed=1), 2)  # 48 kHz
    with client.websocket_connect("/live/ws?rate=48000&channels=1&lang=en") as ws:
        ready = json.loads(ws.receive_text())
        assert ready["type"] == "ready" and ready["in_use"] == 1 and ready["limit"] == 1
        for low in range(0, x.size, 960):  # 20 ms blocks
            ws.send_bytes(block(x[low : low + 960], 7.0))
        message = ws.receive_bytes()
        clock, compute, wait, first = struct.unpack_from("<4d", message)
        n = (len(message) - 32) // 8
        assert clock == 7.0 and compute > 0 and wait >= 0 and first == 0 and n % 1920 == 0 and n >= 1920
        ws.send_text(json.dumps({"type": "stop"}))
        while True:
            reply = ws.receive()
            if reply.get("text"):
                done = json.loads(reply["text"])
                break
    assert done["type"] == "done" and done["stats"]["frames"] == 13
    out = live.load_result(workspace.root, done["id"])
    assert out is not None and out.token_file.is_file() and out.reconstruction_wav.is_file()
    assert out.facts["sample_rate"] == 48_000 and out.timing["live"]["frames"] == 13
    assert engine.live.in_use == 0
    assert (
        live.load_result(workspace.root, "../etc") is None and live.load_result(workspace.root, "req-live-nope") is None
    )


def test_the_page_is_told_how_many_frames_a_packet_holds(live_app, monkeypatch):
    # its latency table counts the codec's wait as a packet of frames, not one frame (4 on a CPU with
    # the published model)
    client, engine, _workspace = live_app
    for frames in (1, 2):
        monkeypatch.setattr(engine, "settings", dataclasses.replace(engine.settings, live_packet_frames=frames))
        with client.websocket_connect("/live/ws?rate=24000&channels=1&lang=en") as ws:
            ready = json.loads(ws.receive_text())
            assert ready["type"] == "ready" and ready["packet_frames"] == frames
            ws.send_text(json.dumps({"type": "stop"}))
            while not ws.receive().get("text"):  # until the stopped session is saved
                pass


@pytest.mark.parametrize(
    "query, payload, expected",
    [
        ("rate=4000&channels=1", None, "not supported (4000 Hz"),
        ("rate=48000&channels=9", None, "not supported"),
        ("rate=abc", None, "not supported (0 Hz"),
        ("rate=48000&channels=2", b"\x00" * 8 + b"\x00" * 12, "malformed"),  # 3 floats for 2 channels
        ("rate=8000&channels=1", b"\x00" * 8 + b"\x00" * 4 * 9000, "longer than 1 s"),
    ],
)
def test_bad_formats_and_blocks_are_refused_with_a_sentence(live_app, query, payload, expected):
    client, engine, _ = live_app
    with client.websocket_connect(f"/live/ws?{query}") as ws:
        first = json.loads(ws.receive_text())
        if payload is not None:
            assert first["type"] == "ready"
            ws.send_bytes(payload)
            first = json.loads(ws.receive_text())
        assert first["type"] == "error" and expected in first["message"]
    assert engine.live.in_use == 0


def test_the_next_page_is_told_busy_in_its_language(live_app):
    _, engine, workspace = live_app
    limits = ClientLimits(LimitSettings(live_sessions=2))  # two sockets of one client: the second meets the cap
    client = live_routes.live_client(engine, workspace, limits=limits)
    with client.websocket_connect("/live/ws?rate=48000") as first:
        assert json.loads(first.receive_text())["type"] == "ready"
        with client.websocket_connect("/live/ws?rate=48000&lang=zh-CN") as second:
            busy = json.loads(second.receive_text())
        assert busy["type"] == "error" and "1 of 1 sessions are in use" in busy["message"]
        assert "实时通道正忙" in busy["message"]
    assert engine.live.in_use == 0  # the first page's socket ended: its session is gone


def test_a_silent_page_is_closed_and_its_session_freed(live_app, monkeypatch):
    client, engine, _ = live_app
    monkeypatch.setattr(live_socket, "IDLE_S", 0.3)
    with client.websocket_connect("/live/ws?rate=48000") as ws:
        assert json.loads(ws.receive_text())["type"] == "ready"
        idle = json.loads(ws.receive_text())
    assert idle["type"] == "error" and "No audio arrived" in idle["message"]
    assert engine.live.in_use == 0


def test_another_site_and_a_missing_login_are_refused(live_app):
    client, engine, _ = live_app
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect("/live/ws?rate=48000", headers={"origin": "https://evil.example"}) as ws:
            ws.receive_text()
    assert refused.value.code == 4403
    with pytest.raises(WebSocketDisconnect) as refused:  # the same host on another port: not ours (issue 31)
        with client.websocket_connect("/live/ws?rate=48000", headers={"origin": "http://testserver:7860"}) as ws:
            ws.receive_text()
    assert refused.value.code == 4403
    with client.websocket_connect("/live/ws?rate=48000", headers={"origin": "http://testserver"}) as ws:
        assert json.loads(ws.receive_text())["type"] == "ready"
    client.app.auth, client.app.cookie_id, client.app.tokens = ("user", "pass"), "x", {}
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect("/live/ws?rate=48000") as ws:
            ws.receive_text()
    assert refused.value.code == 4403
    assert engine.live.in_use == 0


def test_a_page_sending_faster_than_real_time_is_stopped(live_app):
    """Audio more than PACE_SLACK_S ahead of the clock is refused: a flood cannot fill the server."""
    client, engine, _ = live_app
    second = np.zeros(8_000, np.float32)  # 1 s at 8 kHz, the largest block a page may send
    with client.websocket_connect("/live/ws?rate=8000") as ws:
        assert json.loads(ws.receive_text())["type"] == "ready"
        replies = []
        # 20 s of audio at once: far enough ahead however slowly a loaded machine takes the first
        # blocks (with 5 s, a run under load 12 caught up with the clock and then heard silence)
        for _ in range(20):
            ws.send_bytes(block(second))
        while True:
            reply = ws.receive()
            if reply.get("text"):
                replies.append(json.loads(reply["text"]))
                break
    assert replies[-1]["type"] == "error" and "faster than real time" in replies[-1]["message"]
    assert engine.live.in_use == 0
