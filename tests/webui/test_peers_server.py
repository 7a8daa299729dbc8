"""A client cannot choose its own address: over a real socket to a running app (the uvicorn server
Gradio starts), a loopback client that sends a new ``X-Forwarded-For`` with every request is still
one client for the login back-off, the shared tests' join limit and the live slots, because no
``--trusted-proxies`` are set (``webui.serving.peers``). Before, uvicorn's own proxy middleware
believed the header from loopback: 15 wrong passwords never met a 429, 130 of 130 joins passed, and
one client held both live slots."""

from __future__ import annotations

import base64
import json
import os
import socket
import urllib.error
import urllib.request

import numpy as np
import pytest

from core.listening.shared_test_store import store_for
from core.model.engine import Engine
from core.settings import Settings
from tests.ports import reserve_port
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch
from webui.serving.shared_test_routes import JOINS_PER_MIN


@pytest.fixture(scope="module")
def locked(tiny_checkpoint, tmp_path_factory):
    """(url, engine, cookie): the whole app with a login and two live slots, no trusted proxies."""
    engine = Engine(
        Settings(model=str(tiny_checkpoint), device="cpu", data_dir=str(tmp_path_factory.mktemp("peers-data")))
    )
    assert engine.load(), engine.error
    ui = UiOptions(temp_root=tmp_path_factory.mktemp("peers-work"))
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port(), auth=("ann", "s3cret")))
    status, headers, _ = _login(url, "s3cret")
    assert status == 200
    cookie = "; ".join(c.split(";", 1)[0] for c in headers.get_all("set-cookie"))
    yield url.rstrip("/"), engine, cookie
    demo.close()


def _request(url: str, data: bytes | None = None, headers: dict | None = None):
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def _login(url: str, password: str, forwarded: str | None = None):
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if forwarded:
        headers["X-Forwarded-For"] = forwarded
    return _request(url.rstrip("/") + "/login", f"username=ann&password={password}".encode(), headers)


def _live_open(url: str, cookie: str, forwarded: str) -> tuple[socket.socket, dict]:
    """A WebSocket to /live/ws from loopback, claiming ``forwarded``: (the socket, its first message)."""
    host, port = url.split("//")[1].split(":")
    s = socket.create_connection((host, int(port)), timeout=20)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(
        (
            f"GET /live/ws?rate=48000&lang=en HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Cookie: {cookie}\r\nX-Forwarded-For: {forwarded}\r\n\r\n"
        ).encode()
    )
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    head, rest = got.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 101"), head
    while len(rest) < 2 or len(rest) < _frame_end(rest):
        rest += s.recv(4096)
    start = 4 if rest[1] & 0x7F == 126 else 2
    return s, json.loads(rest[start : _frame_end(rest)])


def _frame_end(data: bytes) -> int:
    """Where the server's first (unmasked, text) frame ends."""
    n = data[1] & 0x7F
    if n == 126:
        return 4 + int.from_bytes(data[2:4], "big") if len(data) >= 4 else 1 << 30
    return 2 + n


def test_a_forged_forwarded_for_from_loopback_does_not_reset_the_login_back_off(locked):
    url, _engine, _cookie = locked
    statuses = [_login(url, "wrong", forwarded=f"203.0.113.{i}")[0] for i in range(8)]
    assert statuses[:5] == [400] * 5  # the free tries
    assert 429 in statuses[5:], statuses  # then one client, whatever it claims


def test_a_forged_forwarded_for_does_not_escape_the_join_limit(locked):
    url, engine, cookie = locked
    plan = {"a_source": "original", "b_source": "reconstruction", "trials": 2}
    audio = {(0, s): np.zeros(2400, dtype=np.int16) for s in ("original", "reconstruction")}
    link, _owner = store_for(engine.settings).create("abx", "sha", plan, audio)
    statuses = []
    for i in range(JOINS_PER_MIN + 3):
        body = json.dumps({"nickname": ""}).encode()
        headers = {"Content-Type": "application/json", "Cookie": cookie, "X-Forwarded-For": f"198.51.100.{i % 250}"}
        statuses.append(_request(f"{url}/listen/{link}/join", body, headers)[0])
    assert statuses[:JOINS_PER_MIN] == [200] * JOINS_PER_MIN
    assert statuses[JOINS_PER_MIN:] == [429] * 3


def test_a_forged_forwarded_for_does_not_take_a_second_live_slot(locked):
    url, engine, cookie = locked
    assert engine.live.limit >= 2  # a slot is free for another client: the refusal is the per-client cap
    first, hello = _live_open(url, cookie, "192.0.2.1")
    try:
        assert hello["type"] == "ready", hello
        second, refused = _live_open(url, cookie, "192.0.2.2")
        second.close()
        assert refused["type"] == "error" and "already have a live session" in refused["message"], refused
    finally:
        first.close()
