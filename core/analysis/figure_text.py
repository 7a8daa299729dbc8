"""The words drawn into the figures (titles, axes), in English for the CLI and the reports; the web
page passes its reader's (``webui.views.figure_words``). And a CJK fallback font for them: with it,
Chinese titles draw as characters instead of boxes."""

from __future__ import annotations

FIGURE_WORDS = {  # the figures' titles and axes in English; the web page passes its reader's (webui.views.figure_words)
    "original": "Original",
    "reconstruction": "Reconstruction",
    "difference": "Difference (reconstruction - original)",
    "time": "time (s)",
    "frequency": "frequency (kHz)",
    "spectrogram": "Log-mel spectrogram",
}
CJK_FONTS = ("WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans SC")  # fallbacks for Chinese figure text


def use_cjk_fallback() -> None:
    """Let figure text fall back to a CJK font where the default has no glyph (matplotlib >= 3.6 falls
    back per glyph): Chinese titles draw as characters, not boxes. A font that is not installed is skipped."""
    import matplotlib
    from matplotlib import font_manager

    have = {f.name for f in font_manager.fontManager.ttflist}
    extra = [name for name in CJK_FONTS if name in have and name not in matplotlib.rcParams["font.sans-serif"]]
    if extra:
        matplotlib.rcParams["font.sans-serif"] = [*matplotlib.rcParams["font.sans-serif"], *extra]
        families = list(matplotlib.rcParams["font.family"])
        matplotlib.rcParams["font.family"] = [*families, *(f for f in extra if f not in families)]
