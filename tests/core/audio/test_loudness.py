"""Loudness matching through pyloudnorm (ITU-R BS.1770)."""

from __future__ import annotations

import pytest

from core.audio import loudness


def test_half_amplitude_needs_six_db(speech):
    x = speech(3.0)
    reference, quieter = loudness.integrated_lufs(x), loudness.integrated_lufs(0.5 * x)
    assert reference is not None and quieter is not None
    assert loudness.matching_gain_db(reference, quieter) == pytest.approx(6.02, abs=0.05)
    assert loudness.matching_gain_db(quieter, reference) == pytest.approx(-6.02, abs=0.05)


def test_gain_is_capped_and_unmeasurable_clips_get_none(speech):
    x = speech(3.0)
    assert (
        loudness.matching_gain_db(loudness.integrated_lufs(x), loudness.integrated_lufs(0.03 * x)) == 20.0
    )  # needs +30 dB
    assert loudness.integrated_lufs(speech(0.2)) is None  # shorter than one 400 ms gating block
    assert loudness.integrated_lufs(0.0 * x) is None  # silence: -inf LUFS
    assert loudness.matching_gain_db(None, -20.0) == 0.0
