"""Token usage: codes used, entropy and perplexity per codebook, histograms."""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis import token_usage
from core.errors import SettingsError


def _codes() -> np.ndarray:
    frames = 2048
    codes = np.zeros((frames, 16), dtype=np.int64)
    codes[:, 0] = 7  # one code only
    codes[:, 1] = np.arange(frames)  # every code once: uniform
    codes[:, 2] = np.arange(frames) % 2 * 1000  # two codes, half each
    codes[:, 3] = np.where(np.arange(frames) < 1536, 5, 6)  # 3/4 and 1/4
    return codes


def test_used_entropy_and_perplexity():
    rows = token_usage.usage(_codes())
    assert [r.codebook for r in rows] == list(range(1, 17))
    one, uniform, two, skewed = rows[:4]
    assert (one.used, one.entropy_bits, one.perplexity) == (1, 0.0, 1.0)
    assert (uniform.used, uniform.entropy_bits, uniform.perplexity) == (2048, 11.0, 2048.0)
    assert (two.used, two.entropy_bits, two.perplexity) == (2, 1.0, 2.0)
    expected = -(0.75 * np.log2(0.75) + 0.25 * np.log2(0.25))
    assert skewed.used == 2 and skewed.entropy_bits == pytest.approx(expected, abs=1e-3)


def test_histograms_count_every_frame():
    counts = token_usage.histograms(_codes())
    assert counts.shape == (16, 2048)
    assert (counts.sum(axis=1) == 2048).all()
    assert counts[2, 1000] == 1024 and counts[0, 7] == 2048


@pytest.mark.parametrize("codebook", [0, 17, "x", None])
def test_unknown_codebook_is_refused(codebook):
    with pytest.raises(SettingsError, match="1 to 16"):
        token_usage.check_codebook(codebook)


def test_wrong_shape_is_refused():
    with pytest.raises(SettingsError, match="shape"):
        token_usage.usage(np.zeros((10, 8), dtype=np.int64))


def test_usage_figure_names_the_chosen_codebook():
    fig = token_usage.usage_figure(_codes(), codebook=3)
    titles = [ax.get_title() for ax in fig.axes]
    assert any("Codebook 3: 2 of 2048 codes used" in t for t in titles)
