"""The verdict, the report and the "Evaluate files" tab through their handlers (tiny checkpoint).
In the browser: the card and the report in tests/webui/test_demo_flow_browser.py."""

from __future__ import annotations

import zipfile
from pathlib import Path

import gradio as gr
import pytest

from webui.options import ASSETS
from webui.tabs.evaluate import EvaluateHandlers
from webui.tabs.review import ReviewHandlers

CLIP = ASSETS / "speech_male_24k.wav"


@pytest.fixture
def reviewer(tabs):
    return ReviewHandlers(tabs.engine, tabs.workspace)


@pytest.mark.slow
def test_verdict_follows_the_metrics_and_the_report_packs_the_round_trip(tabs, reviewer):
    rt = tabs.roundtrip.roundtrip(str(CLIP))
    original, reconstruction, downloads, details = rt[0], rt[1], rt[6], rt[7]
    _, metrics_details = tabs.roundtrip.metrics(original, reconstruction)
    text, verdict = reviewer.verdict(original, reconstruction, metrics_details, None)
    assert verdict["level"] in ("green", "amber", "red")
    assert 1.0 <= verdict["mos_original"] <= 5.0 and 1.0 <= verdict["mos_reconstruction"] <= 5.0
    assert "random weights" in text  # the tiny checkpoint is random: the caveat is always there
    assert "DistillMOS" in text and any(w in text for w in ("Close to", "Noticeably", "Badly"))

    zip_path, html_path = map(
        Path, reviewer.report(original, reconstruction, downloads, details, metrics_details, verdict, None)
    )
    with zipfile.ZipFile(zip_path) as z:
        names = z.namelist()
    assert any(n.endswith("_tokens.npz") for n in names) and "metrics.json" in names
    others = len(details["compare"]["sources"])  # the anchors made beside the codec (tests/webui/test_compare.py)
    assert sum(n.endswith(".png") for n in names) == 2 and sum(n.endswith(".wav") for n in names) == 2 + others
    page = html_path.read_text()
    assert "data:audio/wav;base64," in page and verdict["words"].capitalize() in page


def test_report_without_a_round_trip_asks_for_one(reviewer):
    with pytest.raises(gr.Error, match="No original audio yet"):
        reviewer.report(None, None, None, None, None, None, None)


@pytest.fixture
def evaluator(tabs):
    return EvaluateHandlers(tabs.engine, tabs.workspace)


@pytest.mark.slow
def test_evaluate_files_gives_a_row_per_file_and_keeps_going_past_a_bad_one(evaluator, bad_audio, clip):
    summary, table, files, which, _open, row_files = evaluator.evaluate([str(clip), str(bad_audio), str(clip)], None)
    assert "3 files" in summary and "1 could not be evaluated" in summary
    assert row_files[1] == "" and row_files[0] and row_files[2]  # a failed row has nothing to open in the lab
    assert [value for _name, value in which.choices] == [row_files[0], row_files[2]]
    rows = table.value["data"]
    assert [r[0] for r in rows] == ["speech 3s.wav", "not_audio.wav", "speech 3s.wav (2)"]
    assert rows[1][-1] and not rows[0][-1]
    assert [Path(f).name for f in files] == ["metrics.csv", "report.html", "evaluation.zip"]


def test_evaluate_without_files_says_so(evaluator):
    with pytest.raises(gr.Error, match="No files yet"):
        evaluator.evaluate([], None)
