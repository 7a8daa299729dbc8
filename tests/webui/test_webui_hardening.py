"""Issue 8 on a live in-process server (loopback only): file inputs given as URLs, uploads
that break off, a missing or broken temp root, the login's reach and back-off, slow
clients, a full disk. Every loop is bounded in count and time."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from gradio import processing_utils
from gradio_client import Client, handle_file

from tests.ports import reserve_port
from tests.webui.tab_handlers import Tabs
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch
from webui.serving import storage, timeouts
from webui.serving.workspace import Workspace

MIB = 1 << 20


def _request(url: str, data: bytes | None = None, headers: dict | None = None, method: str | None = None):
    """(status, headers, body) of one request; never raises on an HTTP error status."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def _json_post(url: str, body) -> tuple[int, bytes]:
    status, _, text = _request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return status, text


@pytest.fixture(scope="module")
def hardened(engine, tmp_path_factory):
    """A live server with its own temp root; yields (url, root)."""
    root = tmp_path_factory.mktemp("hardened") / "root"
    ui = UiOptions(temp_root=root)
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    yield url, root
    demo.close()


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


# ------------------------------------------------------------------ item 5: no server-side fetch


@pytest.mark.parametrize("route", ["gradio_api/call/roundtrip", "gradio_api/run/decode", "gradio_api/queue/join"])
def test_a_file_input_given_as_a_url_is_refused_before_gradio_fetches_it(hardened, monkeypatch, route):
    """Gradio would download {"path": "http://..."} itself (its SSRF check refuses loopback,
    so this test sends no traffic anywhere either way); the guard refuses the request first."""
    fetches = []
    real = processing_utils.async_ssrf_protected_download

    async def spy(url, cache_dir):
        fetches.append(url)
        return await real(url, cache_dir)

    monkeypatch.setattr(processing_utils, "async_ssrf_protected_download", spy)
    url, _root = hardened
    file_data = {"path": "http://127.0.0.1:9/clip.wav", "meta": {"_type": "gradio.FileData"}}
    body = {"data": [file_data], "fn_index": 0, "session_hash": "t"} if "queue" in route else {"data": [file_data]}
    status, text = _json_post(url + route, body)
    if status == 200 and "event_id" in text.decode():  # accepted: let Gradio process it
        _request(url + "gradio_api/call/roundtrip/" + json.loads(text)["event_id"])
        time.sleep(1.0)
    assert fetches == []
    assert status == 400 and b"uploaded files only" in text


# ------------------------------------------------------------------ item 7: upload names


def _multipart(disposition: str, payload: bytes) -> tuple[bytes, dict]:
    body = b"--XX\r\nContent-Disposition: " + disposition.encode() + b"\r\n\r\n" + payload + b"\r\n--XX--\r\n"
    return body, {"Content-Type": "multipart/form-data; boundary=XX"}


def test_an_upload_part_without_a_file_name_is_a_400_that_says_so(hardened):
    url, _root = hardened
    status, _, text = _request(url + "gradio_api/upload", *_multipart('form-data; name="files"', b"RIFF"))
    assert status == 400 and b"needs a file name" in text
    status, _, text = _request(url + "gradio_api/upload", *_multipart('form-data; name="files"; filename=""', b"RIFF"))
    assert status == 200  # an empty name is named by Gradio
    assert _request(url + "ready")[0] == 200


def test_a_directory_given_as_input_says_the_upload_has_no_file(tabs, tmp_path):
    with pytest.raises(gr.Error, match="no file name"):
        tabs.roundtrip.roundtrip(str(tmp_path))


# ------------------------------------------------------------------ item 2: aborted uploads


def _abort_upload(port: int, sent_mib: float = 1.0) -> None:
    """Start a 2 MiB multipart upload, send part of it, and hang up."""
    head = b'--XX\r\nContent-Disposition: form-data; name="files"; filename="big.wav"\r\n\r\n'
    total = len(head) + 2 * MIB + len(b"\r\n--XX--\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            b"POST /gradio_api/upload HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: multipart/form-data; boundary=XX\r\n"
            b"Content-Length: " + str(total).encode() + b"\r\n\r\n" + head
        )
        s.sendall(b"\0" * int(sent_mib * MIB))
        time.sleep(0.3)  # let the server spool what it got


def test_aborted_uploads_leave_nothing_behind(hardened):
    url, root = hardened
    spool = storage.tmp_dir(root)
    before = set(spool.iterdir())
    for _ in range(5):
        _abort_upload(_port(url))
    deadline = time.monotonic() + 30
    while set(spool.iterdir()) - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(spool.iterdir()) - before == set()
    assert _request(url + "ready")[0] == 200


# ------------------------------------------------------------------ item 6: the temp root


def test_a_deleted_temp_root_is_recreated_and_requests_still_work(hardened, clip):
    url, root = hardened
    shutil.rmtree(root)
    assert _request(url + "ready")[0] == 200 and root.is_dir()  # /ready recreates it
    shutil.rmtree(root)
    client = Client(url, verbose=False)
    out = client.predict(handle_file(str(clip)), api_name="/roundtrip")
    assert Path(out[1]).is_file() and root.is_dir()


def test_ready_is_503_while_the_temp_root_cannot_be_made(hardened):
    url, root = hardened
    shutil.rmtree(root)
    root.write_text("a file where the temp folder should be")
    try:
        status, _, text = _request(url + "ready")
        assert status == 503 and b"temp folder" in text
    finally:
        root.unlink()
    assert _request(url + "ready")[0] == 200


def test_handlers_recreate_a_deleted_workspace_root(engine, tmp_path, clip):
    h = Tabs.of(engine, Workspace(tmp_path / "work"))
    shutil.rmtree(tmp_path / "work")
    assert h.roundtrip.roundtrip(str(clip))[-1]["tokens"]["frames"] == 38


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (needs root; CI runs as root)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()}); needs root")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # soundfile's callback
def test_a_full_disk_is_named_as_the_cause(engine, small_disk, clip):
    """The round trip writes two WAVs of 3 s (288 KB each) into a disk with ~100 KB left."""
    (small_disk / "filler").write_bytes(b"\0" * (2 * MIB - 100_000))
    h = Tabs.of(engine, Workspace(small_disk / "root"))
    with pytest.raises(gr.Error, match="disk is full") as caught:
        h.roundtrip.roundtrip(str(clip))
    assert "AssertionError" not in str(caught.value)


def test_a_real_enospc_is_recognised_on_a_roomy_disk(tmp_path):
    with pytest.raises(OSError) as caught, open("/dev/full", "wb") as full:
        full.write(b"x" * 10)
    assert storage.is_disk_full(caught.value, tmp_path)
    assert not storage.is_disk_full(ValueError("something else"), tmp_path)


# ------------------------------------------------------------------ item 7: slow clients


def _closed_within(s: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Read until the server closes (True) or ``seconds`` pass (False)."""
    s.settimeout(0.5)
    got, deadline = b"", time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            return True, got
        if not chunk:
            return True, got
        got += chunk
    return False, got


def test_headers_that_never_end_get_408_and_a_close(hardened, monkeypatch):
    monkeypatch.setattr(timeouts.TimedH11Protocol, "header_timeout_s", 1.0)
    url, _root = hardened
    with socket.create_connection(("127.0.0.1", _port(url)), timeout=5) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        closed, got = _closed_within(s, 6.0)
    assert closed and got.startswith(b"HTTP/1.1 408")


def test_a_body_that_stops_coming_is_cut_off_and_its_upload_removed(hardened, monkeypatch):
    monkeypatch.setattr(timeouts.TimedH11Protocol, "body_idle_s", 1.0)
    url, root = hardened
    spool = storage.tmp_dir(root)
    before = set(spool.iterdir())
    head = b'--XX\r\nContent-Disposition: form-data; name="files"; filename="slow.wav"\r\n\r\n'
    with socket.create_connection(("127.0.0.1", _port(url)), timeout=5) as s:
        s.sendall(
            b"POST /gradio_api/upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XX\r\n"
            b"Content-Length: 1000000\r\n\r\n" + head + b"\0" * 100_000
        )
        closed, _ = _closed_within(s, 6.0)
    assert closed
    deadline = time.monotonic() + 5
    while set(spool.iterdir()) - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(spool.iterdir()) - before == set()


def test_a_long_response_is_not_cut_by_the_header_timeout(hardened, monkeypatch, clip):
    monkeypatch.setattr(timeouts.TimedH11Protocol, "header_timeout_s", 0.5)
    client = Client(hardened[0], verbose=False)
    out = client.predict(handle_file(str(clip)), api_name="/roundtrip")
    assert Path(out[1]).is_file()


# ------------------------------------------------------------------ item 7: the login


@pytest.fixture(scope="module")
def locked(engine, tmp_path_factory):
    root = tmp_path_factory.mktemp("locked")
    ui = UiOptions(temp_root=root)
    demo = build_app(engine, ui)
    server = ServerOptions(port=reserve_port(), auth=("ann", "s3cret"), trusted_proxies=frozenset({"127.0.0.1"}))
    _app, url = launch(demo, engine, ui, server)  # behind deploy/nginx: the replicas trust 127.0.0.1
    yield url
    demo.close()


def _login(url: str, password: str, real_ip: str | None = None):
    data = f"username=ann&password={password}".encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if real_ip is not None:  # what deploy/nginx adds: the address it saw
        headers["X-Real-IP"] = real_ip
    return _request(url + "login", data, headers)


def test_with_a_login_set_only_state_ready_and_reason_are_public(locked):
    status, _, text = _request(locked + "health")
    assert status == 200 and set(json.loads(text)) == {"status", "state", "ready", "reason"}
    assert _request(locked + "openapi.json")[0] in (401, 404)
    status, _, _ = _request(
        locked + "gradio_api/cancel",
        json.dumps({"session_hash": "x", "fn_index": 0, "event_id": "y"}).encode(),
        {"Content-Type": "application/json"},
    )
    assert status == 401
    status, headers, _ = _login(locked, "s3cret")
    assert status == 200
    cookie = "; ".join(c.split(";", 1)[0] for c in headers.get_all("set-cookie"))
    status, _, text = _request(locked + "health", headers={"Cookie": cookie})
    assert status == 200 and "pid" in json.loads(text) and json.loads(text)["engine"]["model_path"]


def test_wrong_passwords_back_off_per_client(locked):
    statuses = []
    deadline = time.monotonic() + 20
    for _ in range(40):  # bounded in count and time
        if time.monotonic() > deadline:
            break
        status, headers, _ = _login(locked, "wrong")
        statuses.append(status)
    assert statuses[:5] == [400] * 5  # five free tries
    # then refused unchecked, except one try per doubling wait (1 s, 2 s, 4 s ...)
    assert statuses.count(400) <= 10 and statuses.count(429) >= 25 and len(statuses) == 40
    status, headers, _ = _login(locked, "s3cret")
    if status == 429:  # the right password waits too
        assert int(headers["retry-after"]) >= 1
        time.sleep(int(headers["retry-after"]) + 0.2)
        status = _login(locked, "s3cret")[0]
    assert status == 200  # then gets in, and the count starts afresh
    assert _login(locked, "wrong")[0] == 400


def test_behind_the_proxy_each_client_backs_off_on_its_own(locked):
    """Through nginx every request comes from 127.0.0.1; X-Real-IP (set by deploy/nginx) tells the
    clients apart, so one client's wrong passwords do not lock out another."""
    first = [_login(locked, "wrong", real_ip="203.0.113.7")[0] for _ in range(7)]
    assert first[:5] == [400] * 5 and 429 in first[5:]
    assert _login(locked, "wrong", real_ip="198.51.100.9")[0] == 400  # another client: its own count
    assert _login(locked, "s3cret", real_ip="2001:db8::1")[0] == 200


def test_only_a_proxy_the_operator_named_can_name_the_client():
    from webui.serving.throttle import LOOPBACK, client_key

    def scope(peer: str, real_ip: bytes | None = None) -> dict:
        return {"client": (peer, 1234), "headers": [(b"x-real-ip", real_ip)] if real_ip is not None else []}

    assert client_key(scope("127.0.0.1", b"203.0.113.7"), LOOPBACK) == "203.0.113.7"
    assert client_key(scope("::1", b"2001:DB8:0::1"), LOOPBACK) == "2001:db8::1"  # one spelling per address
    assert client_key(scope("192.0.2.5", b"203.0.113.7"), LOOPBACK) == "192.0.2.5"  # a remote peer cannot choose
    assert client_key(scope("127.0.0.1", b"not an address"), LOOPBACK) == "127.0.0.1"
    assert client_key(scope("127.0.0.1"), LOOPBACK) == "127.0.0.1"
    assert client_key(scope("127.0.0.1", b"203.0.113.7")) == "127.0.0.1"  # no proxy named: nobody believed
    assert client_key({"headers": []}) == "?"


# ------------------------------------------------------------------ item 2: one root, whole process


@pytest.mark.slow
def test_python_m_webui_writes_nothing_outside_its_temp_root(tiny_checkpoint, tmp_path, clip):
    """The real entry point, with its own system temp folder: after a round trip and five
    aborted uploads, that folder is still empty and no partial upload is left in the root."""
    import os
    import sys

    system_tmp, root, port = tmp_path / "system-tmp", tmp_path / "root", reserve_port()
    system_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(system_tmp), "GRADIO_ANALYTICS_ENABLED": "False"}
    env.pop("GRADIO_TEMP_DIR", None)
    log = open(tmp_path / "server.log", "w+")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webui",
            "--model",
            str(tiny_checkpoint),
            "--device",
            "cpu",
            "--port",
            str(port),
            "--temp-dir",
            str(root),
        ],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the server exited early"
            try:
                if _request(url + "ready")[0] == 200:
                    break
            except OSError:
                time.sleep(0.5)
        out = Client(url, verbose=False).predict(handle_file(str(clip)), api_name="/roundtrip")
        assert out[-1]["tokens"]["frames"] == 38
        for _ in range(5):
            _abort_upload(port)

        def spooled() -> list:
            return [p for p in storage.tmp_dir(root).iterdir() if p.is_file() and p.name.startswith("tmp")]

        deadline = time.monotonic() + 30
        while spooled() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert spooled() == []
        assert list(system_tmp.rglob("*")) == []
        assert any(storage.gradio_dir(root).rglob("*.wav"))  # Gradio's cache is under the root
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


# ------------------------------------------------------------------ item 1: token files obey the duration cap


def test_a_token_file_longer_than_the_limit_is_refused_on_the_decode_tab(tabs, engine, tmp_path):
    from core.tokens import make_token_file, save_tokens

    frames = int(engine.settings.max_duration_s * 12.5) + 13  # one second over the limit
    codes = np.random.default_rng(0).integers(0, 2048, size=(frames, 16))
    path = save_tokens(make_token_file(codes, frames * 1920, "test"), tmp_path / "long_tokens.npz")
    start = time.monotonic()
    with pytest.raises(gr.Error, match="over the 30.0 min limit"):
        tabs.decode.decode(str(path))
    assert time.monotonic() - start < 30  # refused, not decoded (30 min of audio takes minutes here)
