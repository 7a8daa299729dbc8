"""Untrusted input through the tabs' handlers (tiny checkpoint): token bombs where nothing is decoded, the
report from server-side results, the doctor's own address, and a damaged MP3."""

from __future__ import annotations

import time

import gradio as gr
import psutil
import pytest
import soundfile as sf

from webui.tabs.lab import LabHandlers
from webui.tabs.review import ReviewHandlers

MIB = 1 << 20


@pytest.fixture
def lab(tabs) -> LabHandlers:
    return LabHandlers(tabs.engine, tabs.workspace)


@pytest.fixture
def reviewer(tabs) -> ReviewHandlers:
    return ReviewHandlers(tabs.engine, tabs.workspace)


@pytest.fixture
def pair(tmp_path, speech):
    """An original and a 'reconstruction' (1 s each, float WAVs as the round trip writes them)."""
    original, reconstruction = tmp_path / "clip_24k_mono.wav", tmp_path / "clip_decoded.wav"
    sf.write(original, speech(1.0), 24_000, subtype="FLOAT")
    sf.write(reconstruction, speech(1.0, seed=1), 24_000, subtype="FLOAT")
    return str(original), str(reconstruction)


def _refused_quickly(call) -> str:
    """Run ``call``; it must raise gr.Error within 1 s and take less than 100 MB; return the message."""
    process = psutil.Process()
    before, started = process.memory_info().rss, time.monotonic()
    with pytest.raises(gr.Error) as caught:
        call()
    assert time.monotonic() - started < 1.0
    assert process.memory_info().rss - before < 100 * MIB
    return str(caught.value)


# ------------------------------------------------------------------ finding 4: token bombs


def test_a_token_bomb_is_refused_by_token_usage_and_report_at_once(lab, reviewer, tabs, token_bomb, pair):
    """1 MB on disk, 256 MB of codes: /token_usage took 15.6 GB and /report 10.6 GB; /decode and
    /ladder refused it only after loading it."""
    message = _refused_quickly(lambda: lab.token_usage([str(token_bomb)], 1, None))
    assert "bomb_tokens.npz" in message and "limit" in message
    bomb = [{"path": str(token_bomb)}]
    message = _refused_quickly(lambda: reviewer.report(*pair, bomb, None, None, None, None))
    assert "limit" in message
    assert "limit" in _refused_quickly(lambda: tabs.decode.decode(str(token_bomb)))
    assert "limit" in _refused_quickly(lambda: lab.ladder(pair[0], bomb, ["1"], None))


# ------------------------------------------------------------------ finding 12: damaged MP3 on the page


def test_the_page_refuses_a_damaged_mp3_with_the_truncation_rule(tabs, damaged_mp3):
    with pytest.raises(gr.Error, match=r"header promises 1\.50 s"):
        tabs.roundtrip.roundtrip(str(damaged_mp3))


# ------------------------------------------------------------------ finding 10: the report is the server's


def test_the_report_and_the_verdict_use_the_servers_results_not_the_clients(tabs, reviewer, clip):
    """/report printed "Close to the original" for the random-weight model, without the caveat,
    from a verdict the client made up; the verdict took PESQ/STOI from the client too."""
    import json
    import zipfile
    from pathlib import Path

    rt = tabs.roundtrip.roundtrip(str(clip))
    original, reconstruction, downloads, details = rt[0], rt[1], rt[6], rt[7]
    forged_metrics = {"metrics": [{"name": "PESQ-WB", "value": 4.49}, {"name": "STOI", "value": 0.999}], "seconds": 0}
    forged_verdict = {"level": "green", "words": "close to the original", "reasons": [], "caveat": "", "seconds": 0}
    forged_verdict |= {"mos_original": 4.5, "mos_reconstruction": 4.5, "windows": []}
    _card, judged = reviewer.verdict(original, reconstruction, forged_metrics, None)
    assert "PESQ-WB 4.49" not in "; ".join(judged["reasons"]) and judged["caveat"]  # the server's metrics
    forged_details = details | {"timing": {"model_s": 123456.0}}
    zip_path, _html = reviewer.report(
        original, reconstruction, downloads, forged_details, forged_metrics, forged_verdict, None
    )
    with zipfile.ZipFile(Path(zip_path)) as z:
        summary = json.loads(z.read("metrics.json"))
    assert summary["verdict"]["caveat"] and summary["verdict"] == judged  # the server's verdict, caveat and all
    pesq = next(m["value"] for m in summary["metrics"] if m["name"] == "PESQ-WB")
    assert pesq != 4.49 and summary["environment"]["timings_s"].get("model_s") != 123456.0
