"""``python -m core live``: codes equal to ``python -m core encode`` of the same file, the streamed
audio, a latency report; real time when asked; clear refusals. In process (core.cli.main.main)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import soundfile as sf

from core.audio.files import resample
from core.cli.main import main

pytestmark = pytest.mark.usefixtures("single_thread")  # see tests/conftest.py


def test_live_codes_equal_encode_and_the_report_names_the_parts(tiny_checkpoint, tmp_path, speech, capsys):
    wav = tmp_path / "talk.wav"
    x = resample(speech(1.3, seed=2), 24_000, 44_100)
    sf.write(wav, np.stack([x, x], axis=1), 44_100)  # a stereo 44.1 kHz file
    model = ["--model", str(tiny_checkpoint), "--device", "cpu"]
    assert main(["live", str(wav), "-o", str(tmp_path / "live"), "--block-ms", "80", *model]) == 0
    assert main(["encode", str(wav), "-o", str(tmp_path / "enc"), *model]) == 0
    live, offline = np.load(tmp_path / "live" / "talk.npz"), np.load(tmp_path / "enc" / "talk.npz")
    np.testing.assert_array_equal(live["codes"], offline["codes"])
    audio, rate = sf.read(tmp_path / "live" / "talk.live.wav")
    assert rate == 24_000 and audio.shape == (int(round(1.3 * 24_000)),)
    report = json.loads((tmp_path / "live" / "talk.latency.json").read_text())
    assert report["algorithmic_ms"] == 80.0 and report["blocks"] == 17 and not report["realtime"]
    assert report["compute_ms_per_block"]["median"] > 0 and report["realtime_factor"] > 0
    assert "real-time factor" in capsys.readouterr().out


def test_realtime_takes_the_clips_duration(tiny_checkpoint, tmp_path, speech):
    wav = tmp_path / "short.wav"
    sf.write(wav, speech(0.6), 24_000)
    start = time.perf_counter()
    args = ["live", str(wav), "-o", str(tmp_path), "--realtime", "--model", str(tiny_checkpoint), "--device", "cpu"]
    assert main(args) == 0
    assert time.perf_counter() - start >= 0.55


def test_a_file_over_the_live_limit_is_refused_before_any_work(tiny_checkpoint, tmp_path, speech, capsys):
    wav = tmp_path / "long.wav"
    sf.write(wav, speech(2.0), 24_000)
    args = ["live", str(wav), "-o", str(tmp_path / "o"), "--live-max-s", "1", "--model", str(tiny_checkpoint)]
    assert main(args) == 1
    assert "over the live limit" in capsys.readouterr().err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    assert main(["live", str(wav), "-o", str(tmp_path / "o"), "--block-ms", "0", "--model", str(tiny_checkpoint)]) == 1
