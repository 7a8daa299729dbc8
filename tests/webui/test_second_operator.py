"""Issue 31, finding 4: loading or unloading the second checkpoint is the operator's action. A
visitor's unload of the checkpoint the operator started with (and a visitor's load) is refused,
unless ``--second-for-visitors``; a round trip that asked for the second checkpoint and has none
lists the problem instead of an empty comparison."""

from __future__ import annotations

import shutil

import gradio as gr
import pytest

from core.model import second
from core.model.engine import Engine
from core.settings import Settings
from webui.jobs import compare as compare_jobs
from webui.serving.workspace import Workspace
from webui.tabs.second_model import SecondHandlers
from webui.views.compare_view import problems_markdown

VISITOR = gr.Request(headers={"accept-language": "en"}, client={"host": "203.0.113.7", "port": 40000})
PROXIED = gr.Request(headers={"accept-language": "en", "x-real-ip": "203.0.113.8"}, client={"host": "127.0.0.1"})
OPERATOR = gr.Request(headers={"accept-language": "en"}, client={"host": "127.0.0.1", "port": 40000})


@pytest.fixture
def with_second(tiny_checkpoint, second_checkpoint, tmp_path):
    root = tmp_path / "models"
    shutil.copytree(second_checkpoint, root / "finetuned")
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    assert engine.load()
    assert second.load_second(engine, str(root / "finetuned")).ready  # as --compare-model starts it
    return engine, root, Workspace(tmp_path / "work")


def test_a_visitors_unload_and_load_are_refused_and_the_second_stays(with_second):
    engine, root, workspace = with_second
    h = SecondHandlers(engine, workspace, root, trusted=frozenset({"127.0.0.1"}))
    for request in (VISITOR, PROXIED):  # a visitor directly, and one named by the trusted proxy
        with pytest.raises(gr.Error, match="for the operator"):
            h.unload(request)
        with pytest.raises(gr.Error, match="for the operator"):
            h.load("finetuned", "same", request)
    assert second.ready_second(engine) is not None and engine.ready  # both models untouched
    assert h.unload(OPERATOR)[1] == {"state": "none"} and engine.ready  # the operator may; the first stays


def test_the_operator_can_allow_visitors(with_second):
    engine, root, workspace = with_second
    assert SecondHandlers(engine, workspace, root, visitors=True).unload(VISITOR)[1] == {"state": "none"}


def test_a_round_trip_that_asked_for_the_second_and_has_none_lists_the_problem(engine, tmp_path, speech):
    assert second.ready_second(engine) is None
    x = speech(1.0)
    extra = compare_jobs.extra_sources(engine, x, engine.encode_array(x).codes, ["compare"], tmp_path, "clip")
    assert extra.sources == [] and [p["reason"] for p in extra.problems] == [compare_jobs.NO_SECOND]
    assert "none is loaded now" in problems_markdown(extra.problems, "en")
    assert "没有第二个检查点" in problems_markdown(extra.problems, "zh-CN")


def test_the_picker_is_rescanned_on_open(engine, tmp_path, second_checkpoint):
    root = tmp_path / "models"
    root.mkdir()
    h = SecondHandlers(engine, Workspace(tmp_path / "work"), root)
    assert h.folders().choices == []
    shutil.copytree(second_checkpoint, root / "added-later")  # after the app started
    picker = h.folders(None)
    assert [c[0] for c in picker.choices] == ["added-later"] and picker.value == "added-later"
