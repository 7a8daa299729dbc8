"""Issue 29, item 5: on the Chinese page every picture's title and axis label is Chinese, checked on
the figure's text before it is drawn (every Text artist of the figure), and the English figures are
unchanged. Before the issue the figures took no words: these tests failed there."""

from __future__ import annotations

import re

import numpy as np
import pytest

from core.analysis import metrics, token_usage
from tests.conftest import speechlike
from webui.views import figure_words

HAN = re.compile(r"[\u4e00-\u9fff]")


def _texts(fig) -> list[str]:
    """The titles and axis labels of every axes of ``fig`` (colour-bar labels are units: dB)."""
    out = []
    for ax in fig.axes:
        for piece in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()):
            if piece and piece != "dB":
                out.append(piece)
    return out


def _figures(lang):
    words = figure_words.of(lang)
    x = speechlike(1.0)
    codes = np.random.default_rng(0).integers(0, 2048, size=(20, 16))
    return {
        "spectrograms": metrics.spectrogram_figure(x, 0.9 * x, words=words["spectrogram"]),
        "single": metrics.single_spectrogram_figure(x, title=words["decoded"], words=words["spectrogram"]),
        "usage": token_usage.usage_figure(codes, 3, words=words["usage"]),
    }


@pytest.mark.parametrize("name", ["spectrograms", "single", "usage"])
def test_chinese_figures_have_chinese_titles_and_axes(name):
    texts = _texts(_figures("zh-CN")[name])
    assert texts, "the figure has titles and axis labels"
    english = [t for t in texts if not HAN.search(t)]
    assert not english, f"English left in a Chinese figure: {english}"


def test_english_figures_keep_their_words():
    texts = _texts(_figures("en")["spectrograms"]) + _texts(_figures("en")["usage"])
    assert "Original" in texts and "time (s)" in texts and "entropy (bits)" in texts
    assert texts == [t for t in texts if not HAN.search(t)]
    default = _texts(metrics.spectrogram_figure(speechlike(1.0), speechlike(1.0)))  # the CLI's, no words given
    assert default == _texts(_figures("en")["spectrograms"])
