"""Loudness matching for listening comparisons (ITU-R BS.1770 integrated loudness, via pyloudnorm).

A louder version of the same sound tends to be heard as better, so the flip player plays every
version at the original's integrated loudness: each gets a gain, shown to the listener, and the
files themselves stay as decoded. Gains are limited to ``MAX_GAIN_DB`` either way, so a nearly
silent decode is not blown up to full scale.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from core.codec import SAMPLE_RATE

MAX_GAIN_DB = 20.0  # largest boost or cut applied to match loudness
MIN_SECONDS = 0.4  # BS.1770 gates 400 ms blocks: shorter clips have no integrated loudness


@functools.lru_cache(maxsize=2)
def _meter(rate: int):
    import pyloudnorm

    return pyloudnorm.Meter(rate)  # BS.1770-4 K-weighting and gating


def integrated_lufs(x, sample_rate: int = SAMPLE_RATE) -> float | None:
    """Integrated loudness in LUFS; None for clips too short or too quiet to measure."""
    audio = np.asarray(x, dtype=np.float64).reshape(-1)
    if audio.size < MIN_SECONDS * sample_rate:
        return None
    value = float(_meter(sample_rate).integrated_loudness(audio))
    return value if math.isfinite(value) else None


def matching_gain_db(reference_lufs: float | None, lufs: float | None) -> float:
    """The gain (dB) that brings ``lufs`` to ``reference_lufs``, within +-MAX_GAIN_DB; 0 when
    either cannot be measured."""
    if reference_lufs is None or lufs is None:
        return 0.0
    return float(np.clip(reference_lufs - lufs, -MAX_GAIN_DB, MAX_GAIN_DB))
