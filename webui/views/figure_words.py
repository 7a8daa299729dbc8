"""The figures' titles and axes in the page's language (no matplotlib picture keeps
English words on the Chinese page). Core draws with the words it is given
(``core.analysis.metrics.FIGURE_WORDS``, ``core.analysis.token_usage.USAGE_WORDS``); the jobs hand
these on. Chinese glyphs draw with a CJK fallback font where one is installed (``use_cjk_fallback``)."""

from __future__ import annotations

from core.analysis.figure_text import FIGURE_WORDS, use_cjk_fallback
from core.analysis.token_usage import USAGE_WORDS
from webui.i18n import DEFAULT_LANGUAGE, text

use_cjk_fallback()


def of(lang: str = DEFAULT_LANGUAGE) -> dict:
    """{"spectrogram": FIGURE_WORDS in ``lang``, "usage": USAGE_WORDS in ``lang``, "decoded": a title}."""
    return {
        "spectrogram": {key: text(f"figure.{key}", lang) for key in FIGURE_WORDS},
        "usage": {key: text(f"figure.usage.{key}", lang) for key in USAGE_WORDS},
        "decoded": text("figure.decoded", lang),
    }
