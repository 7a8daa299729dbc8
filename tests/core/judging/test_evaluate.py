"""Folder evaluation as a user runs it: good and bad files give one row each, exit 0."""

from __future__ import annotations

import csv
from pathlib import Path

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
    made = sorted(p.name for p in (out / "reconstructions").glob("*.wav"))
    assert len(made) == 2 and not any(name.endswith(".wav.wav") for name in made), made  # issue 29: clip7.wav.wav
    heard = sorted(p.name for p in (out / "listen").glob("*.wav"))  # the pair of each queued file, not originals only
    assert sum("_reconstruction" in n for n in heard) == 2 and sum("_original" in n for n in heard) == 2, heard
    again = cli("evaluate", folder, "-o", out, "--model", tiny_checkpoint)
    assert again.returncode == 1 and "already exists" in again.stderr  # earlier results are never overwritten


def test_a_folder_that_is_not_there_is_one_line_error(tmp_path, capsys):
    from core.cli.main import main

    assert main(["evaluate", str(tmp_path / "nope"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "is not a folder" in err and "Traceback" not in err


# ------------------------------------------------------------------ issue 19, finding 9: nothing lost on a name


def _odd_folder(folder: Path, speech) -> Path:
    """Clips named as people name them: a space, the same name with an underscore, bytes that are not UTF-8."""
    import os

    folder.mkdir(parents=True)
    sf.write(folder / "a b.wav", speech(1.0), 24_000, subtype="PCM_16")
    sf.write(folder / "a_b.wav", speech(1.0, seed=1), 24_000, subtype="PCM_16")
    sf.write(os.path.join(os.fsencode(folder), b"caf\xe9 latin-1.wav"), speech(1.0, seed=2), 24_000, subtype="PCM_16")
    return folder


def test_odd_names_give_every_row_unique_outputs_and_the_report(tiny_checkpoint, tmp_path, speech, capsys):
    """A non-UTF-8 name crashed the run after all the work (2 of 9 rows, no report), and "a b.wav" and
    "a_b.wav" wrote the same reconstruction (the second got a FileExistsError naming a server path)."""
    from core.cli.main import main

    folder, out = _odd_folder(tmp_path / "in", speech), tmp_path / "out"
    assert main(["evaluate", str(folder), "-o", str(out), "--model", str(tiny_checkpoint), "--device", "cpu"]) == 0
    with (out / "metrics.csv").open(encoding="utf-8") as f:
        rows = {r["file"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == ["a b.wav", "a_b.wav", "caf\\xe9 latin-1.wav"]
    assert all(r["error"] == "" for r in rows.values()), rows
    outputs = sorted(r["reconstruction"] for r in rows.values())
    assert len(set(outputs)) == 3 and all((out / o).is_file() for o in outputs)
    assert "caf\\xe9 latin-1.wav" in (out / "report.html").read_text(encoding="utf-8")
    assert str(tmp_path) not in (out / "metrics.csv").read_text(encoding="utf-8")


def test_each_row_is_on_disk_as_soon_as_its_file_is_done(tiny_engine, tmp_path, speech):
    from core.judging.evaluate import evaluate_files

    folder, out = _odd_folder(tmp_path / "in", speech), tmp_path / "out"
    files = sorted(folder.iterdir())
    seen = []

    def progress(_fraction, _text):
        if (out / "metrics.csv").exists():
            seen.append((out / "metrics.csv").read_text(encoding="utf-8").count("\n") - 1)

    evaluate_files(tiny_engine, [(p, p.name) for p in files], out, tiny_engine.settings.audio_limits(), progress)
    assert seen == [0, 1, 2]  # before file i, the i finished rows were already written


@pytest.mark.parametrize("inside", [".", "results"])
def test_an_output_folder_inside_the_input_is_refused_before_any_work(tmp_path, speech, capsys, inside):
    from core.cli.main import main

    folder = _odd_folder(tmp_path / "in", speech)
    assert main(["evaluate", str(folder), "-o", str(folder / inside), "--model", str(tmp_path / "no-model")]) == 1
    err = capsys.readouterr().err
    assert "inside the folder being evaluated" in err and "Traceback" not in err
    assert not (folder / "metrics.csv").exists() and not (folder / "results").exists()
