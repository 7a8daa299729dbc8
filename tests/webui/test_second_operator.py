"""Issue 31, finding 4: loading or unloading the second checkpoint is the operator's action. A
visitor's unload of the checkpoint the operator started with (and a visitor's load) is refused,
unless ``--second-for-visitors``; a round trip that asked for the second checkpoint and has none
lists the problem instead of an empty comparison."""

from __future__ import annotations

import shutil

import gradio as gr
import pytest

from core.audio.files import audio_from_array
from core.codec import SAMPLE_RATE
from core.errors import EngineNotReady
from core.judging import sources
from core.model import second
from core.model.engine import Engine, EngineState
from core.settings import Settings
from tests.webui.english import english_sentences
from webui import i18n
from webui.jobs import abx as abx_jobs
from webui.jobs import compare as compare_jobs
from webui.serving.workspace import Workspace
from webui.tabs.second_model import SecondHandlers
from webui.views.compare_view import problems_markdown
from webui.views.words import codec_error_text

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
    made = sources.make_sources(engine, audio_from_array(x, SAMPLE_RATE), [], compare=True)
    extra = compare_jobs.page_sources(engine, made, ["compare"], {}, tmp_path, "clip")
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


def test_a_second_checkpoint_that_is_loading_or_failed_is_said_so_not_missing(tiny_checkpoint, tmp_path, speech):
    """While the second checkpoint loads, the page said "none is loaded" (roundtrip_both's "No second
    checkpoint is loaded", the comparison's problem, a blind test's B): now it says it is loading and
    to try again in a moment; a failed load says why; none says how to load one. In both languages."""
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    assert engine.load()
    x = speech(1.0)

    def said():
        """(the comparison's problem in en and zh-CN, a blind test's B refusal in zh-CN, roundtrip_both's error
        in en and as the zh-CN page words it)"""
        problems = compare_jobs.missing_second(engine, ["compare"])
        assert [p["reason"] for p in problems] == [compare_jobs.NO_SECOND]
        with pytest.raises(abx_jobs.BlindInputError) as blind:
            abx_jobs.make_b(engine, ("compare", None), x, audio_from_array(x, SAMPLE_RATE))
        with pytest.raises(EngineNotReady) as both:
            second.roundtrip_both(engine, audio_from_array(x, SAMPLE_RATE))
        b_zh = i18n.TranslatedError(blind.value.key, **blind.value.fields).in_language("zh-CN")
        page = (problems_markdown(problems, "en"), problems_markdown(problems, "zh-CN"), b_zh)
        return page + (str(both.value), codec_error_text(both.value, "zh-CN"))

    loading = Engine(second.second_settings(engine, str(tiny_checkpoint)), lock=engine._lock)
    loading.state = EngineState.LOADING  # what load_second sets while the weights are read
    engine.compare = loading
    en, zh, b_zh, core_en, core_zh = said()
    assert "still loading" in en and "Run it again in a moment" in en and "none is loaded" not in en
    assert "仍在加载" in zh and "仍在加载" in b_zh and "仍在加载" in core_zh
    assert core_en == "The second checkpoint is still loading: try again in a moment."
    assert english_sentences(core_zh) == [] and english_sentences(b_zh) == []

    failed = second.load_second(engine, str(tmp_path / "no-such-checkpoint"))  # a real failed load
    assert failed.state == EngineState.FAILED and failed.error
    reason = failed.error.strip().rstrip(".")
    en, zh, b_zh, core_en, core_zh = said()
    assert "failed to load" in en and reason in en and "加载失败" in zh and reason in zh
    assert "加载失败" in b_zh and reason in b_zh
    assert core_en.startswith(f"The second checkpoint failed to load: {reason}.") and "--compare-model" in core_en
    assert "加载失败" in core_zh and "--compare-model" in core_zh

    second.unload_second(engine)
    en, zh, b_zh, core_en, core_zh = said()
    assert "none is loaded now" in en and "没有第二个检查点" in zh and "尚未加载第二个检查点" in b_zh
    assert "No second checkpoint is loaded" in core_en and "--compare-model DIR" in core_en
    assert "尚未加载第二个检查点" in core_zh and english_sentences(core_zh) == []
