"""Issue 19, findings 1 and 3 on a live server: Gradio's file route answered by
``webui.serving.files``: byte ranges (a range past the end spun the server for ever) and what may
be served, how (an uploaded HTML or SVG ran as a page of the app's origin)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import soundfile as sf

from tests.ports import reserve_port
from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS
from webui.app import UiOptions, build_app
from webui.server import ServerOptions, launch
from webui.serving import storage

EVIL_HTML = (
    b"<!doctype html><script>fetch('/gradio_api/info').then(r=>r.text()).then(t=>document.title='PWNED')</script>"
)
EVIL_SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>document.title="PWNED"</script></svg>'


def _request(url: str, headers: dict | None = None, method: str = "GET", timeout: float = 5.0):
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def _upload(url: str, name: str, payload: bytes) -> str:
    body = (
        b'--XX\r\nContent-Disposition: form-data; name="files"; filename="'
        + name.encode()
        + b'"\r\n\r\n'
        + payload
        + b"\r\n--XX--\r\n"
    )
    req = urllib.request.Request(url + "gradio_api/upload", body, {"Content-Type": "multipart/form-data; boundary=XX"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())[0]


@pytest.fixture(scope="module")
def served(engine, tmp_path_factory):
    """A live server laid out as ``python -m webui`` lays it out: Gradio's cache under the temp root."""
    import os
    import sys
    import tempfile

    root = tmp_path_factory.mktemp("files") / "root"
    saved_env = {k: os.environ.get(k) for k in ("GRADIO_TEMP_DIR", "TMPDIR")}
    saved_tempdir = tempfile.tempdir
    modules = [m for m in map(sys.modules.get, ("gradio.route_utils", "gradio.routes")) if m is not None]
    saved_defaults = [m.DEFAULT_TEMP_DIR for m in modules]
    storage.use_for_process(root)
    ui = UiOptions(temp_root=root)
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    try:
        yield url, root
    finally:
        demo.close()
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        tempfile.tempdir = saved_tempdir
        for module, value in zip(modules, saved_defaults, strict=True):
            module.DEFAULT_TEMP_DIR = value


@pytest.fixture(scope="module")
def short_wav(served, tmp_path_factory, speech=None) -> tuple[str, bytes]:
    """A 0.5 s 32-bit float WAV (48,080 bytes, as a round trip writes it), uploaded; (server path, bytes)."""
    from tests.conftest import speechlike

    path = tmp_path_factory.mktemp("short") / "short.wav"
    sf.write(path, speechlike(0.5), 24_000, subtype="FLOAT")
    data = path.read_bytes()
    assert len(data) < 65536
    return _upload(served[0], "short.wav", data), data


def _cpu_s_over(seconds: float) -> float:
    import psutil

    process = psutil.Process()
    before = process.cpu_times()
    time.sleep(seconds)
    after = process.cpu_times()
    return (after.user - before.user) + (after.system - before.system)


def test_a_range_past_the_end_is_answered_at_once_and_leaves_the_server_idle(served, short_wav):
    """The lab's player asks bytes=0-65535 of a 48,080-byte WAV: Gradio never finished that answer."""
    url, _root = served
    path, data = short_wav
    started = time.monotonic()
    status, headers, body = _request(url + "gradio_api/file=" + path, {"Range": "bytes=0-65535"}, timeout=1.0)
    assert time.monotonic() - started < 1.0
    assert status == 206 and body == data
    assert headers["content-range"] == f"bytes 0-{len(data) - 1}/{len(data)}"
    assert _cpu_s_over(1.0) < 0.5  # nothing left spinning (Gradio's loop took a whole core)


def test_every_kind_of_range_gets_a_correct_answer(served, short_wav):
    url, _root = served
    path, data = short_wav
    file_url = url + "gradio_api/file=" + path
    size = len(data)
    status, headers, body = _request(file_url, {"Range": "bytes=100-199"})
    assert status == 206 and body == data[100:200] and headers["content-range"] == f"bytes 100-199/{size}"
    status, _, body = _request(file_url, {"Range": f"bytes={size - 10}-"})
    assert status == 206 and body == data[-10:]
    status, _, body = _request(file_url, {"Range": "bytes=-16"})
    assert status == 206 and body == data[-16:]
    status, headers, _ = _request(file_url, {"Range": f"bytes={size}-{size + 100}"})
    assert status == 416 and headers["content-range"] == f"bytes */{size}"
    status, headers, body = _request(file_url, {"Range": "bytes=0-9,20-29"})
    assert status == 206 and headers["content-type"].startswith("multipart/byteranges")
    assert data[:10] in body and data[20:30] in body
    status, _, _ = _request(file_url, {"Range": "bytes=" + "9" * 5000 + "-"})
    assert status in (400, 416)  # a clear refusal, not a 500
    status, headers, body = _request(file_url)
    assert status == 200 and body == data and headers["accept-ranges"] == "bytes"
    status, headers, body = _request(file_url, method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) == size
    assert _request(url + "ready")[0] == 200


@pytest.mark.parametrize("name, payload", [("evil.html", EVIL_HTML), ("evil.svg", EVIL_SVG), ("evil.wav", EVIL_HTML)])
def test_an_uploaded_page_is_never_served_as_a_page(served, name, payload):
    url, _root = served
    path = _upload(url, name, payload)
    status, headers, body = _request(url + "gradio_api/file=" + path)
    assert status == 200 and body == payload  # still downloadable, as uploaded
    assert headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in headers["content-security-policy"]
    if name.endswith(".wav"):  # media keep their type (nosniff: never read as HTML)
        assert headers["content-type"] == "audio/wav"
    else:
        assert headers["content-type"] == "application/octet-stream"
        assert headers["content-disposition"].startswith("attachment")


def test_only_the_apps_own_folders_are_served(served, tmp_path):
    url, root = served
    outside = tmp_path / "secret.wav"
    outside.write_bytes(b"RIFF secret")
    spool = storage.tmp_dir(root)
    spool.mkdir(parents=True, exist_ok=True)
    (spool / "partial.wav").write_bytes(b"RIFF partial")
    request_folder = root / "req-test-abc"
    request_folder.mkdir(parents=True, exist_ok=True)
    (request_folder / "result.wav").write_bytes(b"RIFF result")
    (request_folder / "link.wav").symlink_to(outside)
    for refused in (str(outside), "/etc/passwd", str(spool / "partial.wav"), str(request_folder / "link.wav")):
        assert _request(url + "gradio_api/file=" + refused)[0] == 403, refused
    assert _request(url + "gradio_api/file=" + str(request_folder / "../req-test-abc/result.wav"))[0] == 200
    assert _request(url + "gradio_api/file=" + str(request_folder / "result.wav"))[2] == b"RIFF result"
    assert _request(url + "gradio_api/file=" + str(request_folder / "gone.wav"))[0] == 404


@pytest.mark.browser
def test_chromium_runs_no_script_from_an_uploaded_html_file(served, tmp_path):
    """What the attacker did: open the uploaded page's URL in a browser. Its script must not run."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    url, _root = served
    file_url = url + "gradio_api/file=" + _upload(url, "evil.html", EVIL_HTML)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(accept_downloads=True).new_page()
            asked: list[str] = []
            page.on("request", lambda r: asked.append(r.url))
            try:
                with page.expect_download(timeout=10_000):
                    page.goto(file_url)
            except Exception:  # noqa: BLE001 - no download: then it was shown, and nothing in it may run
                pass
            page.wait_for_timeout(1000)
            assert not any("/gradio_api/info" in u for u in asked), asked
        finally:
            browser.close()


def test_a_file_removed_while_its_answer_starts_is_still_sent_whole(tmp_path):
    """A blind test's X is replaced by the next trial's while the browser still fetches it: the
    answer already under way sends the bytes it promised (a loaded run got a 500 and a traceback)."""
    import asyncio

    from webui.serving import files
    from webui.serving.workspace import PREFIX

    folder = tmp_path / f"{PREFIX}abx"
    folder.mkdir()
    target = folder / "x.wav"
    payload = bytes(range(256)) * 400
    target.write_bytes(payload)
    sent: list[dict] = []

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.start":
            target.unlink(missing_ok=True)  # gone between the headers and the body

    async def receive():
        await asyncio.sleep(3600)

    for headers in ([], [(b"range", b"bytes=100-")]):
        target.write_bytes(payload)
        sent.clear()
        scope = {"type": "http", "method": "GET", "path": f"/gradio_api/file={target}", "headers": headers}
        asyncio.run(files.serve(scope, receive, send, tmp_path, ()))
        start = sent[0]
        body = b"".join(m.get("body", b"") for m in sent[1:])
        assert start["status"] == (206 if headers else 200)
        assert body == (payload[100:] if headers else payload)
    scope = {"type": "http", "method": "GET", "path": f"/gradio_api/file={target}", "headers": []}
    sent.clear()
    asyncio.run(files.serve(scope, receive, send, tmp_path, ()))  # gone before: a 404 that says so
    assert sent[0]["status"] == 404 and b"gone" in sent[1]["body"]
