"""The System tab's Diagnose button: /doctor runs every core/doctor check for the server that
answers, in the browser's language (titles, verdict); evidence, fixes and JSON stay English."""

from __future__ import annotations

import socket

import gradio as gr
from starlette.requests import Request

from webui.i18n import catalogues
from webui.views import doctor_panel


def _request(port: int, language: str) -> gr.Request:
    """A real HTTP request as Gradio hands it to a handler, for a server on 127.0.0.1:port."""
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "server": ("127.0.0.1", port),
        "path": "/",
        "query_string": b"",
        "headers": [(b"host", f"127.0.0.1:{port}".encode()), (b"accept-language", language.encode())],
    }
    return gr.Request(request=Request(scope))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_diagnose_in_chinese(tabs):
    port = _free_port()
    html, report = tabs.system.doctor(_request(port, "zh-CN,zh;q=0.9"))
    for name in ("gpu_torch", "tones", "port", "temp_dir"):
        assert catalogues()["zh-CN"][f"doctor.check.{name}"] in html
    assert ("没有失败项" in html) == report["ok"] and "Nothing failed" not in html
    by_name = {c["name"]: c for c in report["checks"]}
    assert by_name["port"]["evidence"] == f"127.0.0.1:{port} is free"  # the request's own port, English evidence
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
