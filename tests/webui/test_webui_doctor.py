"""The System tab's Diagnose button: /doctor runs every core/doctor check for the server that
answers, in the browser's language (titles, verdict); evidence, fixes and JSON stay English."""

from __future__ import annotations

import socket

import gradio as gr
from starlette.requests import Request

from tests.ports import reserve_port
from webui.i18n import catalogues
from webui.views import doctor_panel


def _request(port: int, language: str) -> gr.Request:
    """A real HTTP request as Gradio hands it to a handler, for a server on 127.0.0.1:port."""
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "server": ("127.0.0.1", port),
        "client": ("127.0.0.1", 50000),  # the operator's browser on the server's loopback: paths and versions shown
        "path": "/",
        "query_string": b"",
        "headers": [(b"host", f"127.0.0.1:{port}".encode()), (b"accept-language", language.encode())],
    }
    return gr.Request(request=Request(scope))


def test_diagnose_in_chinese(tabs):
    from webui.tabs.system import SystemHandlers

    port = reserve_port()
    system = SystemHandlers(tabs.engine, tabs.workspace, lambda: ("127.0.0.1", port))
    html, report = system.doctor(_request(reserve_port(), "zh-CN,zh;q=0.9"))
    for name in ("gpu_torch", "tones", "port", "temp_dir"):
        assert catalogues()["zh-CN"][f"doctor.check.{name}"] in html
    assert ("没有失败项" in html) == report["ok"] and "Nothing failed" not in html
    by_name = {c["name"]: c for c in report["checks"]}
    assert by_name["port"]["evidence"] == f"127.0.0.1:{port} is free"  # the server's port, not the request's
    assert by_name["temp_dir"]["data"]["folder"] == str(tabs.workspace.root)
    assert by_name["tones"]["status"] == "pass" and by_name["placement"]["status"] == "pass"


def test_panel_shows_fixes_and_escapes():
    report = {
        "ok": False,
        "seconds": 1.0,
        "counts": {"pass": 0, "warn": 0, "fail": 1, "skipped": 0},
        "checks": [
            {
                "name": "ffmpeg",
                "title": "ffmpeg on PATH",
                "status": "fail",
                "evidence": "<none>",
                "fix": "`apt-get install ffmpeg`",
                "data": {},
            }
        ],
    }
    html = doctor_panel.panel_html(report, "en")
    assert "1 check(s) failed" in html and "&lt;none&gt;" in html and "<code>apt-get install ffmpeg</code>" in html
    assert "找不到" not in html and "1 项检查失败" in doctor_panel.panel_html(report, "zh-CN")


def test_doctor_endpoint_finds_the_server_itself_on_its_port(client):
    _html, report = client.predict(api_name="/doctor")
    port = {c["name"]: c for c in report["checks"]}["port"]
    assert port["status"] == "pass" and port["data"]["state"] == "ours", port


def test_a_forged_host_header_makes_no_outbound_request(server):
    """Issue 19, finding 5: ``Host: 127.0.0.1:27999`` made the server fetch /health from that port
    and show the answer ("taken by another program" / "is free": a port scanner)."""
    import json
    import threading
    import urllib.request

    url, _demo = server
    trap = socket.socket()
    trap.bind(("127.0.0.1", 0))
    trap.listen()
    trap.settimeout(0.2)
    trap_port, knocked = trap.getsockname()[1], []

    def watch():
        while not stop.is_set():
            try:
                conn, _ = trap.accept()
                knocked.append(1)
                conn.close()
            except OSError:
                continue

    stop = threading.Event()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        forged = {"Content-Type": "application/json", "Host": f"127.0.0.1:{trap_port}"}
        req = urllib.request.Request(url + "gradio_api/call/doctor", b'{"data": []}', forged)
        with urllib.request.urlopen(req, timeout=30) as r:
            event_id = json.loads(r.read())["event_id"]
        result = None
        with urllib.request.urlopen(url + f"gradio_api/call/doctor/{event_id}", timeout=300) as r:
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data:") and line != "data: null":
                    result = json.loads(line[5:])
    finally:
        stop.set()
        watcher.join(timeout=5)
        trap.close()
    assert knocked == []  # nothing was fetched from the port the client named
    port = {c["name"]: c for c in result[1]["checks"]}["port"]
    assert str(trap_port) not in port["evidence"] and port["data"]["state"] == "ours", port
