"""Issue 31, finding 11: ``/doctor`` on a server without a login showed anyone the server's paths and
package versions. A visitor (not on the server's loopback, no login) now sees them hidden; the
operator and a signed-in user see them."""

from __future__ import annotations

import json

import gradio as gr
import torch

from webui.serving.visitors import HIDDEN, redacted
from webui.tabs.system import SystemHandlers

VISITOR = gr.Request(headers={"accept-language": "en"}, client={"host": "203.0.113.7", "port": 40000})
OPERATOR = gr.Request(headers={"accept-language": "en"}, client={"host": "127.0.0.1", "port": 40000})


def test_a_visitor_sees_no_server_paths_or_versions(engine, tmp_path):
    from webui.serving.workspace import Workspace

    h = SystemHandlers(engine, Workspace(tmp_path / "work"))
    shown = json.dumps(h.doctor(OPERATOR)[1])
    assert str(tmp_path) in shown and torch.__version__.split("+")[0] in shown  # the operator's view is whole
    html, report = h.doctor(VISITOR)
    seen = json.dumps(report) + html
    assert str(tmp_path) not in seen and torch.__version__.split("+")[0] not in seen and HIDDEN in seen
    assert report["checks"] and {c["status"] for c in report["checks"]}  # the checks themselves are still there


def test_redaction_keeps_words_and_hides_paths_and_versions():
    text = "torch 2.11.0+cu128 at /usr/lib/python3/site.py; free 12.5 GiB in ~/data, 3 files"
    assert redacted({"e": [text]}) == {"e": [f"torch {HIDDEN} at {HIDDEN}; free 12.5 GiB in {HIDDEN}, 3 files"]}
