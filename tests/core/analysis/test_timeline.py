"""The quality timeline: cells, worst moments, seams, block-wise log-mel, decimation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.analysis import metrics, timeline

RATE = 24_000


@pytest.fixture
def pair(speech):
    """6 s of speech and a copy with light noise and a 100 ms dropout at 3.0 s."""
    x = speech(6.0, seed=2)
    y = x + 0.003 * np.random.default_rng(1).standard_normal(x.size).astype(np.float32)
    y[3 * RATE : 3 * RATE + 2400] = 0.0
    return x, y


def test_worst_moment_is_the_dropout(pair):
    x, y = pair
    tl = timeline.timeline(x, y, decode_chunk_frames=25)
    assert tl.resolution_s <= 0.1
    assert tl.mel_distance_db.size == tl.seg_snr_db.size == -(-x.size // round(tl.resolution_s * RATE))
    first = tl.worst[0]
    assert abs(first.time_s - 3.05) <= 0.3
    assert first.seg_snr_db is not None and first.seg_snr_db <= 0.5  # all signal lost: error = signal
    assert len(tl.worst) == 3
    times = sorted(m.time_s for m in tl.worst)
    assert min(np.diff(times)) >= timeline.WORST_SEPARATION_S - 1e-9
    assert tl.seams_s == (2.0, 4.0)  # 25-frame chunks of 6 s


def test_identical_clips_have_no_distance_and_clamped_snr(speech):
    x = speech(2.0)
    tl = timeline.timeline(x, x.copy())
    assert float(np.nanmax(tl.mel_distance_db)) == 0.0
    finite = tl.seg_snr_db[np.isfinite(tl.seg_snr_db)]
    assert finite.size and np.all(finite == timeline.SEG_SNR_RANGE_DB[1])
    assert tl.seams_s == ()


def test_silent_cells_have_no_snr_and_are_never_worst(speech):
    x = speech(4.0)
    x[: 2 * RATE] = 0.0  # first half silent
    y = x.copy()
    y[: 2 * RATE] = 0.2 * np.random.default_rng(0).standard_normal(2 * RATE)  # loud noise in the silence
    y[3 * RATE :] *= 0.5
    tl = timeline.timeline(x, y)
    cells_per_s = round(1 / tl.resolution_s)
    assert np.isnan(tl.seg_snr_db[: 2 * cells_per_s - 1]).all()
    assert all(m.time_s >= 2.0 for m in tl.worst)


def test_block_wise_log_mel_equals_the_whole_clip(speech, monkeypatch):
    x = speech(3.3, seed=4)
    monkeypatch.setattr(timeline, "BLOCK_S", 0.7)  # many blocks, odd boundaries
    np.testing.assert_array_equal(timeline.log_mel_blocks(x), metrics.log_mel(x))


def test_decimate_keeps_peaks_and_dips():
    values = np.zeros(10_000, dtype=np.float32)
    values[7_777] = 9.0
    times, reduced = timeline.decimate(values, 0.05, 100)
    assert reduced.size <= 100 and float(reduced.max()) == 9.0
    assert times[int(np.argmax(reduced))] == pytest.approx(7_777 * 0.05, abs=100 * 0.05)
    _, dips = timeline.decimate(-values, 0.05, 100, np.nanmin)
    assert float(dips.min()) == -9.0


def test_to_dict_is_small_strict_json(pair):
    x, y = pair
    y = y.copy()
    y[:RATE] = 0.0
    x = x.copy()
    x[:RATE] = 0.0  # silence: NaN SNR cells must become null
    data = timeline.timeline(x, y).to_dict(max_points=50)
    text = json.dumps(data, allow_nan=False)
    assert len(data["time_s"]) <= 50 and None in data["seg_snr_db"]
    assert json.loads(text)["worst"][0]["time_s"] == pytest.approx(3.05, abs=0.3)


def test_waveform_envelope_bounds_the_signal(speech):
    x = speech(5.0)
    env = timeline.waveform_envelope(x, columns=300)
    assert len(env["min"]) == len(env["max"]) <= 300
    assert max(env["max"]) == pytest.approx(float(x.max()), abs=1e-3)
    assert min(env["min"]) == pytest.approx(float(x.min()), abs=1e-3)


@pytest.mark.parametrize("seconds", [1920 / RATE, 0.2, 0.45])
def test_clips_shorter_than_the_worst_window_have_curves_and_no_worst_moments(speech, seconds):
    """One frame (80 ms) up to just under the smoothing window: curves, no worst moments, and the
    reason is in the JSON the page reads (this raised a broadcast ValueError before)."""
    x = speech(seconds)
    tl = timeline.timeline(x, 0.9 * x)
    assert tl.mel_distance_db.size == -(-x.size // round(tl.resolution_s * RATE))
    assert tl.worst == () and tl.too_short_for_worst
    data = tl.to_dict()
    assert data["too_short_for_worst"] is True and data["worst"] == []
    assert timeline.timeline(speech(0.6), 0.9 * speech(0.6)).too_short_for_worst is False
