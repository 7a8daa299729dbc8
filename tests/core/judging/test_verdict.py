"""The verdict: DistillMOS really runs offline and orders clean above degraded speech, and the
traffic-light thresholds are the documented ones."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import soxr

from core.judging import verdict

ALSA_SPEECH = Path("/usr/share/sounds/alsa/Front_Center.wav")  # a recorded voice, from alsa-utils


@pytest.fixture(scope="module")
def mos():
    return verdict.predictor("cpu")  # the process-wide predictor: the model loads once per test run


@pytest.fixture(scope="module")
def espeak_speech(tmp_path_factory):
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: make test-system-deps installs it")
    path = tmp_path_factory.mktemp("espeak") / "speech.wav"
    subprocess.run(["espeak-ng", "-w", str(path), "The quick brown fox jumps over the lazy dog."], check=True)
    x, rate = sf.read(path, dtype="float32")
    return x, rate


def _recorded():
    if not ALSA_SPEECH.is_file():
        pytest.fail(f"{ALSA_SPEECH} is missing: apt-get install alsa-utils (make test-system-deps does)")
    x, rate = sf.read(ALSA_SPEECH, dtype="float32")
    return x.mean(axis=1) if x.ndim > 1 else x, rate


def _low_pass_2khz(x, rate):
    return soxr.resample(soxr.resample(x, rate, 4000), 4000, rate).astype(np.float32)


def _noisy(x, snr_db):
    rms = np.sqrt(np.mean(x**2))
    return (x + rms * 10 ** (-snr_db / 20) * np.random.default_rng(0).standard_normal(x.size)).astype(np.float32)


@pytest.mark.slow
def test_distillmos_orders_clean_recorded_speech_above_noisy_and_low_passed(mos):
    x, rate = _recorded()
    clean = mos.predict(x, rate)
    assert 3.5 < clean <= 5.0  # recorded speech, measured 4.3
    assert mos.predict(_noisy(x, 10), rate) < clean - 0.8
    assert mos.predict(_low_pass_2khz(x, rate), rate) < clean - 0.8


@pytest.mark.slow
def test_distillmos_orders_clean_synthetic_speech_above_degraded(mos, espeak_speech):
    x, rate = espeak_speech
    clean = mos.predict(x, rate)
    assert 1.0 <= clean <= 5.0
    assert mos.predict(_low_pass_2khz(x, rate), rate) < clean - 0.2
    assert mos.predict(np.round(x * 8) / 8, rate) < clean - 0.2  # 4-bit quantisation


def test_silence_and_tiny_clips_give_no_mos(mos):
    assert mos.predict(np.zeros(24_000, np.float32), 24_000) is None
    assert mos.predict(np.ones(100, np.float32), 24_000) is None


def test_thresholds_are_pinned():
    # docs/verdict.md justifies these against the published LibriSpeech figures; change both together
    assert verdict.THRESHOLDS == {
        "PESQ-WB": (3.0, 2.0, True),
        "STOI": (0.93, 0.85, True),
        "MOS drop": (0.5, 1.2, False),
    }


@pytest.mark.parametrize(
    ("pesq", "stoi", "drop", "level"),
    [
        (3.21, 0.96, 0.0, "green"),  # the codec's published means: close to the original
        (3.0, 0.93, 0.5, "green"),
        (2.99, 0.96, 0.0, "amber"),
        (3.5, 0.92, 0.0, "amber"),
        (3.5, 0.96, 0.6, "amber"),
        (1.99, 0.99, 0.0, "red"),
        (3.5, 0.84, 0.0, "red"),
        (3.5, 0.96, 1.3, "red"),
    ],
)
def test_the_worst_signal_sets_the_light(pesq, stoi, drop, level):
    v = verdict.combine({"PESQ-WB": pesq, "STOI": stoi}, 4.0, 4.0 - drop, random_weights=False)
    assert v.level == level
    assert v.words == verdict.WORDS[level]
    assert v.caveat == ""


def test_missing_signals_are_skipped_and_random_weights_always_carry_the_caveat():
    v = verdict.combine({"PESQ-WB": None, "STOI": 0.97}, None, 3.0, random_weights=True)
    assert v.level == "green" and "MOS drop: not available" in v.reasons
    assert "random weights" in v.line
    assert verdict.combine({}, None, None, random_weights=True).level == "unknown"


@pytest.mark.slow
def test_judge_runs_mos_on_both_clips(mos):
    x, rate = _recorded()
    v = verdict.judge(x, _noisy(x, 0), {"PESQ-WB": 3.5, "STOI": 0.97}, rate)
    assert v.mos_original > v.mos_reconstruction + MOS_MARGIN
    assert v.level == "red"  # PESQ/STOI say fine, but the MOS drop is that of heavy noise


MOS_MARGIN = 1.2  # 0 dB SNR noise costs more than the red bound
