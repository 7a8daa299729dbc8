"""The verdict, the report and the "Evaluate files" tab through their handlers (tiny checkpoint)."""

from __future__ import annotations

import re
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
    summary, table, files = evaluator.evaluate([str(clip), str(bad_audio), str(clip)], None)
    assert "3 files" in summary and "1 could not be evaluated" in summary
    rows = table.value["data"]
    assert [r[0] for r in rows] == ["speech 3s.wav", "not_audio.wav", "speech 3s.wav (2)"]
    assert rows[1][-1] and not rows[0][-1]
    assert [Path(f).name for f in files] == ["metrics.csv", "report.html", "evaluation.zip"]


def test_evaluate_without_files_says_so(evaluator):
    with pytest.raises(gr.Error, match="No files yet"):
        evaluator.evaluate([], None)


@pytest.mark.browser
def test_round_trip_in_the_browser_shows_the_verdict_then_gives_the_report(server):
    from playwright.sync_api import expect, sync_playwright

    from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    timeout_ms = 120_000  # round trip, metrics and two MOS predictions on 2 busy cores
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server[0])
        page.locator("#roundtrip-input input[type=file]").set_input_files(str(CLIP))
        expect(page.locator("#roundtrip-input [data-testid=download-link]")).to_be_attached(timeout=timeout_ms)
        page.locator("#roundtrip-run").click()
        verdict_line = page.locator("#roundtrip-verdict")
        expect(verdict_line).to_contain_text("random weights", timeout=timeout_ms)  # only the finished line says it
        expect(verdict_line).to_contain_text("DistillMOS")
        page.locator("#roundtrip-report").click()
        files = page.locator("#roundtrip-report-files")
        expect(files).to_contain_text(".html", timeout=timeout_ms)
        assert re.search(
            r"speech_male_24k_report\s*\.zip.*speech_male_24k_report\s*\.html", files.inner_text(), re.DOTALL
        )
        browser.close()
