"""A live server on loopback, driven by gradio_client: every endpoint, a bad file on every
input endpoint, health routes on the same port, and ``python -m webui`` as a process."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError, AuthenticationError

from core.tokens import load_tokens
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch

REPO = Path(__file__).resolve().parents[2]
ENDPOINTS = {"/status", "/readiness", "/roundtrip", "/metrics", "/encode", "/decode", "/stats", "/clear_vram"}


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_named_endpoints(client):
    names = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
    assert ENDPOINTS <= names


def test_health_and_ready_on_the_ui_port(server):
    url = server[0]
    status, body = _get(url + "health")
    assert status == 200 and body["engine"]["state"] == "ready"
    assert _get(url + "ready")[0] == 200
    with urllib.request.urlopen(url, timeout=10) as r:  # and the page itself
        assert r.status == 200 and "<html" in r.read().decode().lower()


def test_status_and_readiness(client):
    html, raw = client.predict(api_name="/status")
    assert "Weights resident" in html and raw["engine"]["state"] == "ready"
    html, raw = client.predict(api_name="/readiness")
    assert raw["readiness"]["ok"] is True and [s["name"] for s in raw["readiness"]["steps"]] == [
        "cuda",
        "weights",
        "roundtrip",
    ]


def test_roundtrip_encode_decode(client, clip):
    (original, reconstruction, timing, facts, tokens, spectrogram, downloads, details) = client.predict(
        handle_file(str(clip)), api_name="/roundtrip"
    )
    frames = math.ceil(3 * 24_000 / 1920)
    assert Path(original).is_file() and Path(reconstruction).is_file() and Path(spectrogram).is_file()
    assert f"{frames} × 16" in tokens and "Model time" in timing and "Input" in facts
    assert {Path(p).suffix for p in downloads} == {".npz", ".wav"}
    assert details["tokens"]["frames"] == frames

    text, metrics = client.predict(handle_file(original), handle_file(reconstruction), api_name="/metrics")
    from core.analysis import catalog
    from core.analysis.judges import DEFAULT_JUDGES  # the app's judges as started: GE2E, no ASR

    computed = catalog.ids(DEFAULT_JUDGES.rows(catalog.COMPARED))
    assert "PESQ-WB" in text and [m["name"] for m in metrics["metrics"]] == list(computed)

    token_path, summary, heatmap, enc = client.predict(handle_file(str(clip)), api_name="/encode")
    assert load_tokens(token_path).frames == frames and Path(heatmap).is_file()

    wav, meta, spectrogram, dec = client.predict(handle_file(token_path), api_name="/decode")
    assert Path(wav).is_file() and dec["tokens"]["frames"] == frames


def test_stats_and_clear_vram(client):
    text, stats = client.predict(api_name="/stats")
    assert "Process RAM" in text and stats["process_rss_mib"] > 0
    text, result = client.predict(api_name="/clear_vram")
    assert set(result) == {"before", "after"}


@pytest.mark.parametrize(
    "endpoint, fixture, words",
    [
        ("/roundtrip", "bad_audio", "not an audio file"),
        ("/metrics", "bad_audio", "not an audio file"),
        ("/encode", "bad_audio", "not an audio file"),
        ("/decode", "bad_tokens", "token file"),
    ],
)
def test_bad_file_on_each_input_endpoint(client, request, endpoint, fixture, words):
    bad = handle_file(str(request.getfixturevalue(fixture)))
    args = (bad, bad) if endpoint == "/metrics" else (bad,)
    with pytest.raises(AppError, match=words):
        client.predict(*args, api_name=endpoint)
    assert client.predict(api_name="/stats")[1]["process_rss_mib"] > 0  # still serving


def test_login_required_when_auth_is_set(engine, tmp_path, free_port):
    ui = UiOptions(temp_root=tmp_path)
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=free_port, auth=("ann", "s3cret")))
    try:
        with pytest.raises(AuthenticationError):
            Client(url, verbose=False)  # no credentials: the config is refused (401)
        authed = Client(url, auth=("ann", "s3cret"), verbose=False)
        assert authed.predict(api_name="/stats")[1]["process_rss_mib"] > 0
        assert _get(url + "ready")[0] == 200  # probes need no login
    finally:
        demo.close()


def _start(args, env_extra=None, tmp_path=None):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "GRADIO_ANALYTICS_ENABLED": "False", **(env_extra or {})}
    log = open(tmp_path / "server.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "webui", *args], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    return proc, log


def _wait_for(url: str, proc, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited early"
        try:
            _get(url)
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer in {seconds} s")


@pytest.mark.slow
def test_python_m_webui_warms_up_serves_and_stops_on_sigterm(tiny_checkpoint, tmp_path, free_port):
    port = free_port
    proc, log = _start(
        ["--model", str(tiny_checkpoint), "--device", "cpu", "--port", str(port), "--temp-dir", str(tmp_path / "work")],
        tmp_path=tmp_path,
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/health", proc)
        assert _get(f"http://127.0.0.1:{port}/ready")[0] == 200  # warmed up before serving
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    log.seek(0)
    text = log.read()
    for stage in (
        "startup: settings",
        "startup: model loaded and checked: ready",
        "startup: live path warmed",  # the first visitor's first packet is not the process's (core.model.live_warm)
        "startup: stream decoding warmed",  # nor /decode/ws's first client's (core.model.stream_decoder)
        "startup: UI built",
        "startup: serving on http://127.0.0.1",
        "received SIGTERM",
        "stopped",
    ):
        assert stage in text, text
    assert text.index("model loaded and checked") < text.index("live path warmed") < text.index("serving on")
    assert text.index("stream decoding warmed") < text.index("serving on")


@pytest.mark.slow
def test_missing_weights_still_serve_the_page(tmp_path, free_port):
    port = free_port
    proc, log = _start(
        ["--model", str(tmp_path / "nowhere"), "--device", "cpu", "--port", str(port)], tmp_path=tmp_path
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/health", proc)
        status, body = _get(f"http://127.0.0.1:{port}/ready")
        assert status == 503
        html, _ = Client(f"http://127.0.0.1:{port}/", verbose=False).predict(api_name="/status")
        assert "huggingface-cli download" in html and "nowhere" in html
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_bad_settings_exit_with_a_message(tmp_path):
    proc, log = _start(["--device", "auto"], tmp_path=tmp_path)
    assert proc.wait(timeout=120) == 2
    log.seek(0)
    assert "cannot start" in log.read()


def test_the_api_example_in_the_docs_runs(server, clip, capsys):
    text = (REPO / "docs" / "api.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace("http://127.0.0.1:7860/", server[0]).replace('"speech.wav"', repr(str(clip)))
    exec(compile(code, "docs/api.md", "exec"), {})  # noqa: S102 - our own documentation
    out = capsys.readouterr().out
    assert "38 frames" in out and "PESQ-WB" in out and "higher is better" in out
    for endpoint in ENDPOINTS - {"/status", "/readiness", "/stats", "/clear_vram"}:
        assert f'api_name="{endpoint}"' in code


def test_port_in_use_exits_with_a_message_before_loading_the_model(tiny_checkpoint, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc, log = _start(["--model", str(tiny_checkpoint), "--device", "cpu", "--port", str(port)], tmp_path=tmp_path)
        assert proc.wait(timeout=120) == 1
    log.seek(0)
    text = log.read()
    assert f"cannot serve on 127.0.0.1:{port}" in text and "choose another --port" in text, text
    assert "startup: engine created" not in text and "qwen_tts" not in text, text  # checked before the model loads
