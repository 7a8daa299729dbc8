"""200 steps on speech (the examples' voices, tiny checkpoint with layer scales 1.0, CPU, the default
learning rate, mel and loudness losses) lower the held-out multi-resolution log-mel distance by at
least 10 % against the base on the same held-out clips. Random base weights: this shows that training
works, never that audio gets better."""

from __future__ import annotations

import pytest

from core.training import finetune


@pytest.mark.slow
def test_200_steps_lower_the_held_out_mel_distance_by_10_percent(small, tmp_path):
    result = finetune(small(tmp_path / "out", steps=200, learning_rate=1e-4, eval_every=100))
    before, after = result["val_base"]["mel_distance"], result["val_final"]["mel_distance"]
    assert after <= 0.9 * before, (before, after)
