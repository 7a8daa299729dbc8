"""Issue 19, finding 8 (and 13) on a live server: per-client limits where events enter the queue,
results left unread, Gradio's queue-skipping REST route, the disk cap, the ladder's budget, the
heartbeat behind the login, and whose X-Real-IP is believed. Clients are told apart by X-Real-IP
from a trusted loopback proxy, as behind deploy/nginx."""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import gradio as gr
import pytest
import soundfile as sf

from tests.ports import reserve_port
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch
from webui.serving import storage
from webui.serving.limits import LimitSettings
from webui.serving.throttle import LOOPBACK, client_key, trusted_set
from webui.serving.workspace import EVICT_AFTER_S, Workspace

MIB = 1 << 20


def _request(url, data=None, headers=None, method=None, timeout=60.0):
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.fixture(scope="module")
def limited(engine, tmp_path_factory):
    """A live server behind a (pretend) loopback proxy: X-Real-IP names the client."""
    root = tmp_path_factory.mktemp("limited") / "root"
    ui = UiOptions(temp_root=root)
    demo = build_app(engine, ui)
    server = ServerOptions(port=reserve_port(), trusted_proxies=LOOPBACK, limits=LimitSettings(unread=5))
    _app, url = launch(demo, engine, ui, server)
    yield url, root
    demo.close()


def _as(ip: str) -> dict:
    return {"Content-Type": "application/json", "X-Real-IP": ip}


def _upload(url: str, path: Path, ip: str) -> str:
    body = (
        b'--XX\r\nContent-Disposition: form-data; name="files"; filename="clip.wav"\r\n\r\n'
        + path.read_bytes()
        + b"\r\n--XX--\r\n"
    )
    headers = {"Content-Type": "multipart/form-data; boundary=XX", "X-Real-IP": ip}
    status, _, text = _request(url + "gradio_api/upload", body, headers)
    assert status == 200, text
    return json.loads(text)[0]


def _call(url: str, api: str, data: list, ip: str) -> tuple[int, dict]:
    status, _, text = _request(url + f"gradio_api/call/{api}", json.dumps({"data": data}).encode(), _as(ip))
    return status, json.loads(text)


def _result(url: str, api: str, event_id: str, ip: str):
    status, _, text = _request(url + f"gradio_api/call/{api}/{event_id}", headers={"X-Real-IP": ip}, timeout=300)
    assert status == 200
    lines = text.decode().splitlines()
    kinds = [line.split(":", 1)[1].strip() for line in lines if line.startswith("event:")]
    assert kinds and kinds[-1] == "complete", text[-500:]
    return json.loads(next(line for line in reversed(lines) if line.startswith("data:"))[5:])


def _roundtrip_data(server_path: str) -> list:
    """/roundtrip's inputs: the uploaded clip, no reference codecs, no second checkpoint."""
    return [{"path": server_path, "meta": {"_type": "gradio.FileData"}}, [], False]


def _roundtrip_s(url: str, server_path: str, ip: str) -> float:
    started = time.monotonic()
    status, body = _call(url, "roundtrip", _roundtrip_data(server_path), ip)
    assert status == 200, body
    _result(url, "roundtrip", body["event_id"], ip)
    return time.monotonic() - started


def test_a_flood_of_doctor_calls_does_not_hold_up_another_clients_round_trip(limited, tmp_path, speech):
    """60 /doctor calls queued in 0.3 s made another user's round trip take 26.6 s."""
    url, _root = limited
    clip = tmp_path / "clip.wav"
    sf.write(clip, speech(0.5), 24_000, subtype="PCM_16")
    server_path = _upload(url, clip, "198.51.100.2")
    alone = statistics.median(_roundtrip_s(url, server_path, "198.51.100.2") for _ in range(3))
    flood = [_call(url, "doctor", [], "203.0.113.1") for _ in range(60)]
    during = _roundtrip_s(url, server_path, "198.51.100.2")
    refused = [body for status, body in flood if status == 429]
    assert len(refused) >= 50 and "wait for them to finish" in refused[0]["error"]
    assert during - alone < 2.0, (alone, during, os.getloadavg())
    for status, body in flood:  # read what was accepted, so nothing is left behind
        if status == 200:
            _result(url, "doctor", body["event_id"], "203.0.113.1")


def test_results_left_unread_are_capped_per_client(limited):
    url, _root = limited
    made = [_call(url, "status", [], "192.0.2.50") for _ in range(5)]
    assert all(status == 200 for status, _ in made)
    status, body = _call(url, "status", [], "192.0.2.50")
    assert status == 429 and "not yet read" in body["error"]
    assert _call(url, "status", [], "192.0.2.51")[0] == 200  # another client is not held up
    _result(url, "status", made[0][1]["event_id"], "192.0.2.50")  # reading one makes room for one
    assert _call(url, "status", [], "192.0.2.50")[0] == 200


def test_model_jobs_at_once_are_capped_per_client(limited, tmp_path, speech):
    url, _root = limited
    clip = tmp_path / "clip.wav"
    sf.write(clip, speech(0.5), 24_000, subtype="PCM_16")
    server_path = _upload(url, clip, "192.0.2.60")
    file_data = _roundtrip_data(server_path)
    started = [_call(url, "roundtrip", file_data, "192.0.2.60") for _ in range(4)]
    assert [status for status, _ in started].count(429) >= 2  # at most 2 waiting or running
    for status, body in started:
        if status == 200:
            _result(url, "roundtrip", body["event_id"], "192.0.2.60")
    assert _call(url, "roundtrip", file_data, "192.0.2.60")[0] == 200  # done: room again


def test_the_queue_skipping_rest_route_is_closed(limited):
    """Gradio's /gradio_api/run/<name> ran events outside their queue (no limit, no order)."""
    url, _root = limited
    status, _, text = _request(url + "gradio_api/run/status", b'{"data": []}', _as("192.0.2.70"))
    assert status >= 400 and b"queue" in text


def test_only_the_configured_proxies_name_the_client():
    """Finding 13: X-Real-IP was believed from any loopback client (a local proxy passing the
    client's header on defeated the back-off)."""

    def scope(peer: str, real_ip: bytes | None = None) -> dict:
        return {"client": (peer, 1234), "headers": [(b"x-real-ip", real_ip)] if real_ip is not None else []}

    assert client_key(scope("127.0.0.1", b"203.0.113.7")) == "127.0.0.1"  # by default nobody is believed
    nginx = trusted_set("127.0.0.1, ::1")
    assert client_key(scope("127.0.0.1", b"203.0.113.7"), nginx) == "203.0.113.7"
    assert client_key(scope("::1", b"2001:DB8:0::1"), nginx) == "2001:db8::1"
    assert client_key(scope("192.0.2.5", b"203.0.113.7"), nginx) == "192.0.2.5"
    with pytest.raises(ValueError):
        trusted_set("localhost")


def test_the_heartbeat_needs_the_login(engine, tmp_path):
    """Finding 13: with a login, Gradio's heartbeat route answered anonymous clients."""
    ui = UiOptions(temp_root=tmp_path / "root")
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port(), auth=("ann", "s3cret")))
    try:
        status, _, _ = _request(url + "gradio_api/heartbeat/abc", timeout=5)
        assert status == 401
    finally:
        demo.close()


def test_the_temp_folder_cap_evicts_old_results_then_refuses(tmp_path):
    workspace = Workspace(tmp_path / "root", max_bytes=2 * MIB)
    old = workspace.new_dir("old")
    (old / "big.wav").write_bytes(b"\0" * (3 * MIB))
    stale = time.time() - EVICT_AFTER_S - 60
    os.utime(old, (stale, stale))
    storage.forget_usage(workspace.root)
    fresh = workspace.new_dir("fresh")  # over the cap: the old folder goes first
    assert not old.exists() and fresh.is_dir()
    (fresh / "big.wav").write_bytes(b"\0" * (3 * MIB))
    storage.forget_usage(workspace.root)
    with pytest.raises(Exception, match=r"temporary space is full \(3 of 2 MiB\)") as caught:
        workspace.new_dir("refused")  # a recent result is not taken from its user
    assert caught.value.key == "hardening.temp_full" and fresh.is_dir()


def test_an_upload_over_the_cap_is_refused(engine, tmp_path):
    ui = UiOptions(temp_root=tmp_path / "root", max_temp_bytes=MIB)
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    try:
        (tmp_path / "root" / "req-x").mkdir(parents=True)
        (tmp_path / "root" / "req-x" / "big.wav").write_bytes(b"\0" * (2 * MIB))
        storage.forget_usage(tmp_path / "root")
        body = b'--XX\r\nContent-Disposition: form-data; name="files"; filename="a.wav"\r\n\r\nRIFF\r\n--XX--\r\n'
        status, _, text = _request(
            url + "gradio_api/upload", body, {"Content-Type": "multipart/form-data; boundary=XX"}
        )
        assert status == 507 and b"temporary space is full" in text
    finally:
        demo.close()


def test_a_ladder_over_its_budget_is_refused_before_any_model_work(engine, tmp_path, speech):
    """16 levels of a 10-minute clip held the model's queue for 204 s and wrote 924 MB."""
    from dataclasses import replace

    from core.model.engine import Engine
    from webui.tabs.lab import LabHandlers

    clip = tmp_path / "clip.wav"
    sf.write(clip, speech(4.0), 24_000, subtype="PCM_16")
    unloaded = Engine(replace(engine.settings, ladder_max_audio_s=30.0))  # no model: refused before it is needed
    lab = LabHandlers(unloaded, Workspace(tmp_path / "work"))
    with pytest.raises(gr.Error, match=r"16 levels of 4 s, 64 s of audio in all; .* at most 30 s"):
        lab.ladder(str(clip), None, [str(k) for k in range(1, 17)], None)


def test_concurrent_joins_are_counted_per_client_not_per_connection(limited, tmp_path, speech):
    """The cap holds when the joins race each other (threads, one client)."""
    url, _root = limited
    clip = tmp_path / "clip.wav"
    sf.write(clip, speech(0.5), 24_000, subtype="PCM_16")
    server_path = _upload(url, clip, "192.0.2.80")
    file_data = _roundtrip_data(server_path)
    out: list = []
    threads = [
        threading.Thread(target=lambda: out.append(_call(url, "roundtrip", file_data, "192.0.2.80"))) for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    accepted = [body for status, body in out if status == 200]
    assert 1 <= len(accepted) <= 2
    for body in accepted:
        _result(url, "roundtrip", body["event_id"], "192.0.2.80")


def test_the_rate_refills_over_time_and_answers_are_not_metered():
    """Rates per client: a burst of half a minute's worth, then one more per 60/rate seconds; blind-test
    answers and status reads never meet the work rate (a quick listener is never told to wait)."""
    from types import SimpleNamespace

    from webui.serving.limits import ClientLimits, Refusal

    now = [0.0]
    limits = ClientLimits(LimitSettings(starts_per_min=6, calls_per_min=600, jobs=100), clock=lambda: now[0])
    queue = SimpleNamespace(event_queue_per_concurrency_id={}, active_jobs=[])
    scope = {"client": ("192.0.2.9", 1), "headers": []}

    def admit(group: str):
        ticket = limits.admit(scope, SimpleNamespace(concurrency_id=group), queue, frozenset(), False)
        if not isinstance(ticket, Refusal):
            limits.joined(ticket)
        return ticket

    assert [isinstance(admit("lab"), Refusal) for _ in range(4)] == [False, False, False, True]  # burst of 3
    refusal = admit("lab")
    assert refusal.status == 429 and refusal.retry_after_s == pytest.approx(10.0)
    assert not any(isinstance(admit(g), Refusal) for g in ("abx", "status") * 20)  # not metered
    now[0] += 10.0
    assert not isinstance(admit("lab"), Refusal) and isinstance(admit("lab"), Refusal)
    other = {"client": ("192.0.2.10", 1), "headers": []}
    assert not isinstance(
        limits.admit(other, SimpleNamespace(concurrency_id="lab"), queue, frozenset(), False), Refusal
    )


def test_a_read_call_leaves_no_session_behind(engine, tmp_path):
    """Each /gradio_api/call event was a Gradio session of its own (a copy of the page's whole
    configuration) kept until 10,000 existed: 8 clients' calls grew the server by ~3.7 MB a loop."""
    ui = UiOptions(temp_root=tmp_path / "root")
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    try:
        before = len(demo.state_holder.session_data)
        for _ in range(12):
            status, body = _call(url, "status", [], "127.0.0.1")
            assert status == 200
            _result(url, "status", body["event_id"], "127.0.0.1")
        # the server drops a call's records just after sending its result (once its job has left
        # Gradio's running list): give it a moment, as a client would never notice
        deadline = time.monotonic() + 10.0
        while body["event_id"] in demo._queue.event_ids_to_events and time.monotonic() < deadline:
            time.sleep(0.05)
        assert body["event_id"] not in demo._queue.event_ids_to_events
        assert len(demo.state_holder.session_data) - before <= 1  # at most the one a read may race with
    finally:
        demo.close()
