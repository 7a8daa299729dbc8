"""Issue 31, finding 6: every exception in a live session ends with an error sentence to the page
(never a bare 1006) and leaves no half-written result folder. Huge samples made the save raise
``ValueError`` before; ``_finish`` caught only ``CodecError`` and the folder stayed for an hour."""

from __future__ import annotations

import json
import struct

import numpy as np

from core.model import live as core_live
from tests.webui import live_routes
from webui.jobs import live

live_app, one_slot = live_routes.live_app, live_routes.one_slot  # the route's fixtures (tests/webui/live_routes.py)


def _talk(ws, speech) -> None:
    assert json.loads(ws.receive_text())["type"] == "ready"
    x = np.repeat(speech(0.5, seed=2), 2)
    for low in range(0, x.size, 960):
        ws.send_bytes(struct.pack("<d", 1.0) + x[low : low + 960].astype("<f4").tobytes())


def _last_text(ws) -> dict:
    while True:
        reply = ws.receive()
        if reply.get("text"):
            return json.loads(reply["text"])


def test_an_exception_while_saving_is_a_sentence_and_leaves_no_folder(live_app, speech, monkeypatch):
    client, _engine, workspace = live_app

    def broken(*_args, **_kwargs):
        raise ValueError("cannot convert float NaN to integer")  # what huge samples made the figure raise

    monkeypatch.setattr(live.metrics, "spectrogram_figure", broken)
    with client.websocket_connect("/live/ws?rate=48000&lang=zh-CN") as ws:
        _talk(ws, speech)
        ws.send_text(json.dumps({"type": "stop"}))
        reply = _last_text(ws)
    assert reply["type"] == "error" and "实时会话" in reply["message"], reply
    assert not list(workspace.root.glob("req-live-*")), "a half-written result folder was left"


def test_an_exception_while_pushing_is_a_sentence(live_app, speech, monkeypatch):
    client, _engine, _workspace = live_app

    def broken(self, block):
        raise RuntimeError("an engine bug")

    monkeypatch.setattr(core_live.LiveSession, "push", broken)
    with client.websocket_connect("/live/ws?rate=48000&lang=en") as ws:
        _talk(ws, speech)
        reply = _last_text(ws)
    assert reply["type"] == "error" and "went wrong" in reply["message"], reply
