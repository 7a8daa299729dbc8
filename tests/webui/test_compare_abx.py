"""The blind test with B as a reference codec or the second checkpoint, and A as the codec: both
names stored with every trial, in the CSV export and in the result sentence."""

from __future__ import annotations

import csv

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.anchors import BY_ID, make_anchors
from core.audio.files import load_audio
from core.listening import abx_store
from webui.serving.workspace import Workspace
from webui.tabs.abx import AbxHandlers

EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9"})
ZH = gr.Request(headers={"accept-language": "zh-CN,zh;q=0.9"})


@pytest.fixture
def handlers(engine, tmp_path) -> AbxHandlers:
    h = AbxHandlers(engine, Workspace(tmp_path / "work"))
    h.store = abx_store.AbxStore(tmp_path / "data")
    return h


def test_the_codec_against_opus_6_is_stored_and_exported_with_both_names(handlers, engine, clip, tmp_path):
    token, trial, references, *_ = handlers.start(str(clip), 0, 2, 4, "opus6", EN, a_codec=True)
    folder = handlers._folder(token)
    region = load_audio(clip).samples[: 2 * 24_000]
    b = sf.read(folder / "b.wav", dtype="float32")[0]
    opus = np.clip(make_anchors(region, [BY_ID["opus6"]]).made[0].samples, -1, 1)
    np.testing.assert_allclose(b, opus, rtol=0, atol=2 / 32767)  # the real encoder's, as 16-bit dithered (issue 19)
    a = sf.read(folder / "a.wav", dtype="float32")[0]
    assert a.shape == region.shape and not np.allclose(a, region)  # A: the codec's output, not the original
    assert "Opus 6 kbit/s" in references and "the codec at full rate" in references
    for answer in "ABAB":
        trial, *_ = handlers.answer(token, trial, answer, EN)
    text, csv_path, raw = handlers.results(token, EN)
    assert raw["sentence"].endswith("(A: codec 2.2 kbit/s; B: Opus 6 kbit/s)")
    assert "(A: Codec (2.2 kbit/s); B: Opus 6 kbit/s)" in text
    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["a_source"], r["b_source"]) for r in rows] == [("reconstruction", "opus6")] * 4
    everything = handlers.store.export_csv(tmp_path / "all.csv")  # the operator's export too
    with open(everything, newline="", encoding="utf-8") as f:
        assert {(r["a_source"], r["b_source"]) for r in csv.DictReader(f)} == {("reconstruction", "opus6")}


def test_b_as_the_low_pass_anchor_against_the_original(handlers, clip):
    token, *_ = handlers.start(str(clip), 0, 0, 4, "lp3.5", ZH)
    assert handlers.store.results(token).sentence.endswith("(A: original; B: Low-pass 3.5 kHz)")


def test_b_as_the_second_checkpoint_needs_one_loaded(handlers, clip):
    with pytest.raises(gr.Error, match="No second checkpoint is loaded"):
        handlers.start(str(clip), 0, 0, 4, "compare", EN)
    with pytest.raises(gr.Error, match="number of codebooks from 1 to 16.*opus6.*pick one in the list"):
        handlers.start(str(clip), 0, 0, 4, "opus7", EN)
    assert not list(handlers.workspace.root.glob("*abx-*"))  # refused before anything was stored


def test_b_as_the_second_checkpoint(tiny_checkpoint, second_checkpoint, tmp_path, clip):
    from core.model import second
    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    assert engine.load() and second.load_second(engine, str(second_checkpoint)).ready
    h = AbxHandlers(engine, Workspace(tmp_path / "work"))
    h.store = abx_store.AbxStore(tmp_path / "data")
    token, _trial, references, *_ = h.start(str(clip), 0, 0, 4, "compare", EN)
    b = sf.read(h._folder(token) / "b.wav", dtype="float32")[0]
    assert np.allclose(b, engine.compare.roundtrip(load_audio(clip)).decoded.samples, atol=2 / 32767)  # 16-bit
    assert second_checkpoint.name in references
    result = h.store.results(token)
    assert (result.b_source, h.store.rows(token) == []) == ("compare", True)
    assert result.sentence.endswith(f"(A: original; B: second checkpoint 2.2 kbit/s ({second_checkpoint}))")


def test_test_again_with_fewer_codebooks_only_walks_the_ladder():
    from webui.tabs.abx_page import next_level

    assert next_level(16) == 8 and next_level("4") == 2
    assert next_level("opus6") is None and next_level("compare") is None
