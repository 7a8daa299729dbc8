"""Folder evaluation as a user runs it: good and bad files give one row each, exit 0."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import soundfile as sf


@pytest.mark.slow
def test_folder_with_good_and_bad_files_gives_one_row_each_and_exits_0(tiny_checkpoint, tmp_path, speech, cli):
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    sf.write(folder / "good one.wav", speech(1.2), 24_000, subtype="PCM_16")
    sf.write(folder / "sub" / "good_two.flac", speech(1.0, seed=1), 16_000)
    (folder / "broken.wav").write_text("not a RIFF file\n" * 50)
    sf.write(folder / "too_long.wav", speech(4.0, seed=2), 24_000)
    sf.write(folder / "empty.wav", np.zeros(0, np.float32), 24_000)
    (folder / "notes.txt").write_text("not audio, not looked at")
    out = tmp_path / "out"
    proc = cli("evaluate", folder, "-o", out, "--model", tiny_checkpoint, "--max-duration", "3")
    assert proc.returncode == 0, proc.stderr
    assert "it/s" in proc.stderr or "file/s" in proc.stderr or "s/file" in proc.stderr  # the tqdm bar
    rows = {r["file"]: r for r in csv.DictReader((out / "metrics.csv").open())}
    assert sorted(rows) == ["broken.wav", "empty.wav", "good one.wav", "sub/good_two.flac", "too_long.wav"]
    for name in ("good one.wav", "sub/good_two.flac"):
        row = rows[name]
        assert row["error"] == "" and float(row["SI-SDR"]) < 30  # random weights: far from the original
        assert 1.0 <= float(row["mos_original"]) <= 5.0 and 1.0 <= float(row["mos_reconstruction"]) <= 5.0
        assert row["verdict"] in ("green", "amber", "red") and float(row["decode_s"]) > 0
    assert float(rows["good one.wav"]["duration_s"]) == pytest.approx(1.2)
    assert "3" in rows["too_long.wav"]["error"] and rows["too_long.wav"]["verdict"] == ""
    assert rows["broken.wav"]["error"] and rows["empty.wav"]["error"]
    page = (out / "report.html").read_text()
    assert "evaluation of 5 files" in page and "2 evaluated, 3 could not be" in page
    assert "random weights" in page and "data:image/png;base64," in page
    assert page.count("<audio") == 4  # both good files in the listening queue, original + reconstruction
    assert len(list((out / "reconstructions").glob("*.wav"))) == 2
    again = cli("evaluate", folder, "-o", out, "--model", tiny_checkpoint)
    assert again.returncode == 1 and "already exists" in again.stderr  # earlier results are never overwritten


def test_a_folder_that_is_not_there_is_one_line_error(tmp_path, capsys):
    from core.cli.main import main

    assert main(["evaluate", str(tmp_path / "nope"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "is not a folder" in err and "Traceback" not in err
