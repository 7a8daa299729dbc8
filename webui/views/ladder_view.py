"""The codebook ladder's spectrograms as the page shows them: the original first, then each level,
every picture at its natural height (one pixel row per half mel band) across the full width, on
the original's axes: the same kHz ticks on each, one time axis under them all."""

from __future__ import annotations

import html
import math

from core.analysis import metrics
from core.codec import SAMPLE_RATE, bitrate_bps
from core.judging.sources import LEVEL, ORIGINAL
from webui.i18n import text
from webui.views import compare_view

_TIME_TICKS = 6  # about this many labelled times under the pictures


def _esc(value) -> str:
    return html.escape(str(value))


def _name(source_id: str, lang: str) -> str:
    """A picture's source ("original" or a level's "k<n>") by the name its player button has."""
    if source_id == "original":
        return compare_view.source_label({"id": source_id, "kind": ORIGINAL}, lang)
    rate = bitrate_bps(int(source_id[1:]))
    return compare_view.source_label({"id": source_id, "kind": LEVEL, "bitrate_bps": rate}, lang)


def _time_ticks(duration_s: float) -> list[float]:
    if duration_s <= 0:
        return [0.0]
    raw = duration_s / _TIME_TICKS
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = int(duration_s / step + 1e-9)
    return [i * step for i in range(count + 1)]


def spectrograms_html(pictures: list[tuple[str, str]], duration_s: float, lang: str) -> str:
    """``pictures``: (PNG path, source id) from webui.jobs.lab_ladder.run_ladder, the original's first."""
    if not pictures:
        return ""
    ticks, labels = metrics._khz_ticks(SAMPLE_RATE, metrics.N_MELS)  # the original's figure's ticks
    y_axis = "".join(
        f"<span style='bottom:{100 * t / metrics.N_MELS:.1f}%'>{_esc(label)}</span>"
        for t, label in zip(ticks, labels, strict=True)
    )
    figures = []
    for path, source_id in pictures:
        name = _name(source_id, lang)
        alt = text("lab.ladder.alt", lang, name=name, seconds=f"{duration_s:.1f}")
        figures.append(
            "<figure class='cw-spec'>"
            f"<figcaption>{_esc(name)}</figcaption>"
            f"<div class='cw-spec-plot'><div class='cw-spec-y' aria-hidden='true'>{y_axis}</div>"
            f"<img src='gradio_api/file={_esc(path)}' alt='{_esc(alt)}' height='{2 * metrics.N_MELS}'></div>"
            "</figure>"
        )
    x_axis = "".join(
        f"<span style='left:{100 * t / duration_s:.2f}%'>{t:g}</span>" for t in _time_ticks(duration_s) if duration_s
    )
    return (
        f"<div class='cw-ladder-figs'><p class='cw-hint'>{_esc(text('lab.ladder.spectrograms', lang))}</p>"
        f"{''.join(figures)}"
        f"<div class='cw-spec-x' aria-hidden='true'><div>{x_axis}</div><small>{_esc(text('lab.ladder.time_axis', lang))}</small></div>"
        "<p class='cw-spec-units'>" + _esc(text("lab.ladder.khz_axis", lang)) + "</p></div>"
    )
