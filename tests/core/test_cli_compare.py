"""``python -m core roundtrip --anchors ... --compare-model ...`` as a user runs it (in this process,
the ``cli`` fixture): every source's WAV, the second checkpoint's codes, and the metrics table with a
column per source."""

from __future__ import annotations

import csv

import pytest
import soundfile as sf

from tests.core.test_cli import ROOT


def _table(path) -> dict[str, dict[str, str]]:
    rows = list(csv.reader(path.open()))
    header = rows[0]
    return {name: dict(zip(header[1:], values, strict=True)) for name, *values in rows[1:]}


@pytest.mark.slow  # two models, two real encoders and DistillMOS on five sources
def test_roundtrip_writes_every_source_and_one_table(tiny_checkpoint, second_checkpoint, tmp_path, cli):
    speech = sf.read(ROOT / "webui" / "assets" / "speech_male_24k.wav", dtype="float32")[0][: 2 * 24_000]
    sf.write(tmp_path / "clip.wav", speech, 24_000)
    out = tmp_path / "out"
    proc = cli(
        "roundtrip", tmp_path / "clip.wav", "-o", out, "--anchors", "opus6,amr",
        "--model", tiny_checkpoint, "--compare-model", second_checkpoint,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        f"clip.{s}" for s in ("npz", "decoded.wav", "amr.wav", "opus6.wav", "compare.wav", "compare.npz", "metrics.csv")
    )
    for wav in ("decoded", "amr", "opus6", "compare"):
        assert sf.info(out / f"clip.{wav}.wav").frames == speech.size
    table = _table(out / "clip.metrics.csv")
    assert list(table["PESQ-WB"]) == ["original", "reconstruction", "compare", "amr", "opus6"]
    assert float(table["Bitrate"]["reconstruction"]) == 2200.0
    assert abs(float(table["Bitrate"]["opus6"]) - 6000) <= 600 and abs(float(table["Bitrate"]["amr"]) - 12200) <= 1220
    for source in ("reconstruction", "compare", "amr", "opus6"):
        for metric in ("PESQ-WB", "STOI", "SI-SDR", "Log-mel distance", "DistillMOS"):
            float(table[metric][source])  # measured
    assert "Opus 6 kbit/s" in proc.stdout and "second checkpoint" in proc.stdout
    assert "codes equal to the second checkpoint's" in proc.stdout and "random weights" in proc.stdout


def test_a_clip_too_short_for_an_encoder_gives_a_message_and_the_other_sources(tiny_checkpoint, tmp_path, speech, cli):
    sf.write(tmp_path / "short.wav", speech(0.5), 24_000)
    out = tmp_path / "out"
    proc = cli("roundtrip", tmp_path / "short.wav", "-o", out, "--anchors", "opus6,lp3.5", "--no-mos",
               "--model", tiny_checkpoint)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Opus 6 kbit/s needs at least 1 s of audio" in proc.stderr
    assert (out / "short.lp3.5.wav").is_file() and not (out / "short.opus6.wav").exists()
    assert list(_table(out / "short.metrics.csv")["STOI"]) == ["original", "reconstruction", "lp3.5"]


def test_a_second_checkpoint_that_cannot_load_stops_the_command(tiny_checkpoint, tmp_path, speech, cli):
    sf.write(tmp_path / "clip.wav", speech(0.5), 24_000)
    proc = cli("roundtrip", tmp_path / "clip.wav", "-o", tmp_path / "out", "--model", tiny_checkpoint,
               "--compare-model", tmp_path / "nothing-here")  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "second checkpoint" in proc.stderr.strip().splitlines()[-1] and "does not exist" in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
