"""A folder evaluation with anchors: per-source columns in metrics.csv, a per-source summary in
report.html, measured on each file by the real encoders."""

from __future__ import annotations

import csv

import pytest
import soundfile as sf

from core.anchors import parse_anchors
from core.audio.files import AudioLimits
from core.judging.evaluate import evaluate_files


@pytest.mark.slow  # two round trips, two real encoders and DistillMOS on three sources each
def test_per_source_columns_and_summary(tiny_engine, tmp_path, speech):
    files = []
    for i, seconds in enumerate((1.2, 0.6)):  # 0.6 s: too short for Opus, which leaves its columns blank
        path = tmp_path / f"clip{i}.wav"
        sf.write(path, speech(seconds, seed=i), 24_000)
        files.append((path, path.name))
    out = evaluate_files(tiny_engine, files, tmp_path / "out", AudioLimits(), anchors=parse_anchors("opus6,lp3.5"))
    rows = {r["file"]: r for r in csv.DictReader((tmp_path / "out" / "metrics.csv").open())}
    long_row, short_row = rows["clip0.wav"], rows["clip1.wav"]
    for sid in ("reconstruction", "lp3.5", "opus6"):
        for metric in ("PESQ-WB", "STOI", "SI-SDR", "Log-mel distance", "DistillMOS"):
            float(long_row[f"{sid}: {metric}"])
    assert abs(float(long_row["opus6: Bitrate"]) - 6000) < 600 and long_row["lp3.5: Bitrate"] == ""
    assert long_row["opus6: codec is"] in ("closer", "further", "mixed")
    assert short_row["opus6: PESQ-WB"] == "" and short_row["lp3.5: STOI"] != ""
    page = out.html_path.read_text()
    assert "<h2>Per source</h2>" in page
    summary = page.split("<h2>Per source</h2>")[1]
    for sid in ("reconstruction", "lp3.5", "opus6"):
        assert f"<td>{sid}</td>" in summary
    assert "<td>opus6</td><td>1</td>" in summary and "<td>lp3.5</td><td>2</td>" in summary  # files measured
