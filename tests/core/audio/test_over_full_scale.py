"""Issue 31, finding 5 (the input half) and finding 11 (levels far over full scale): finite but enormous
samples (3.4e38 in a float WAV) passed the finite check, overflowed at resampling and gave NaN metrics
and an amber verdict. Audio whose peak is over ``max_peak_dbfs`` (+60 dBFS, 1000x full scale) is now
refused with a sentence on every way in (a file, bytes of a batch row, an array from the API, a live
block); a peak over full scale but under the limit is kept, with a warning."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
import soundfile as sf

from core.audio.files import audio_from_array, load_audio, load_audio_bytes
from core.errors import AudioInputError
from core.settings import AudioLimits, Settings
from tests.conftest import speechlike

LIMITS = AudioLimits()
REFUSED = "far over full scale"


def _loud(peak: float, rate: int = 16_000) -> np.ndarray:
    x = speechlike(1.2, 3, rate)
    return (x / np.abs(x).max() * peak).astype(np.float32)


def _float_wav(peak: float) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, _loud(peak), 16_000, format="WAV", subtype="FLOAT")
    return buffer.getvalue()


@pytest.mark.parametrize("peak", [3.4e38, 1e30, 2000.0])
def test_a_float_wav_far_over_full_scale_is_refused_from_a_file_and_from_bytes(tmp_path, peak):
    path = tmp_path / "loud.wav"
    path.write_bytes(_float_wav(peak))
    with pytest.raises(AudioInputError, match=REFUSED) as refused:
        load_audio(path, LIMITS)
    assert "+60 dBFS" in str(refused.value) and "loud.wav" in str(refused.value)
    with pytest.raises(AudioInputError, match=REFUSED):
        load_audio_bytes(_float_wav(peak), "row.wav", LIMITS)  # a Parquet cell, a tar member


def test_an_array_far_over_full_scale_is_refused(speech):
    with pytest.raises(AudioInputError, match=REFUSED):
        audio_from_array(_loud(3.4e38), 16_000, "microphone", LIMITS)


def test_a_peak_over_full_scale_under_the_limit_is_kept_with_a_warning():
    audio = audio_from_array(_loud(10.0), 16_000, "hot", LIMITS)
    assert np.isfinite(audio.samples).all()
    warning = [w for w in audio.facts.warnings if "over full scale" in w]
    assert warning and "+20 dBFS" in warning[0], audio.facts.warnings
    assert not [w for w in audio_from_array(_loud(0.5), 16_000).facts.warnings if "full scale" in w]


def test_the_limit_is_a_setting():
    limits = Settings(max_peak_dbfs=80.0).audio_limits()
    assert audio_from_array(_loud(2000.0), 16_000, "x", limits).facts.peak > 1000
    with pytest.raises(Exception, match="max_peak_dbfs"):
        Settings(max_peak_dbfs=-1.0)


def test_a_live_block_far_over_full_scale_is_refused(tiny_engine):
    with tiny_engine.live.open(16_000, 1, paced=False) as session:
        with pytest.raises(AudioInputError, match=REFUSED):
            session.push(_loud(3.4e38)[:1600])


@pytest.mark.slow
def test_evaluate_gives_the_refusal_as_the_row_error_never_nan(tiny_checkpoint, tmp_path, cli, speech):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "loud.wav").write_bytes(_float_wav(3.4e38))
    sf.write(folder / "fine.wav", speech(1.2), 24_000)
    out = tmp_path / "out"
    proc = cli("evaluate", folder, "-o", out, "--model", tiny_checkpoint)
    assert proc.returncode == 0, proc.stderr
    rows = {r["file"]: r for r in csv.DictReader((out / "metrics.csv").open())}
    assert REFUSED in rows["loud.wav"]["error"] and rows["loud.wav"]["verdict"] == ""
    assert "nan" not in (out / "metrics.csv").read_text().lower()
