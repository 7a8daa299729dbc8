"""The error curve as a figure and a self-contained HTML page of one decode-parity check.

The figure: max |difference| per 20 ms window in 16-bit steps (log scale) over time, the rounding
level as a line, the official decoder's seams (every 300 frames) as dashed lines with the 72 frames
after each shaded (where 25 frames of context leave the attention window short), where the
difference starts as dotted lines, clicks as triangles. The page embeds it as a ``data:`` URL
(``core.judging.report``'s page and style): it opens offline, mailed alone. Words come from a table
(``core.parity.words.ENGLISH`` by default; the web page passes its catalogue in the reader's language).
"""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from core.analysis.metrics import figure_to_png
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.judging.report import data_url, page
from core.parity import seams, verdict
from core.parity.words import ENGLISH, say, where

FLOOR_LSB = 0.01  # the curve's floor on the log axis (identical windows sit here)
FONTS = [
    "DejaVu Sans",
    "WenQuanYi Micro Hei",
    "Noto Sans CJK SC",
]  # Chinese labels fall back to a CJK font where installed

LABELS = {  # the page's and the figure's fixed words (the web page passes translations)
    "title": "Decode parity",
    "figure_title": "Their WAV against the reference decode",
    "time_axis": "time (s)",
    "error_axis": "max |difference| (LSB)",
    "rounding_line": "rounding level (2 LSB)",
    "seam": "official seam (300 frames) + 72-frame window",
    "onset": "difference starts",
    "click": "click",
    "measures": "Measurements",
    "clicks": "Clicks",
    "notes": "Evidence",
    "offset": "offset (samples)",
    "length": "length difference (samples)",
    "correlation": "correlation",
    "snr": "SNR (dB)",
    "max": "max |difference| (LSB)",
    "first": "first difference (s)",
    "frames": "frames",
    "time": "time (s)",
    "height": "height (LSB)",
    "where": "where",
    "none": "none",
    "random": "Random-weight checkpoint: nothing here says anything about audio quality.",
}


def curve_figure(result, labels: dict | None = None) -> Figure:
    words = {**LABELS, **(labels or {})}
    fig = Figure(figsize=(10, 3.2))
    ax = fig.add_subplot(1, 1, 1)
    times = np.asarray(result.curve.times_s, dtype=float)
    values = np.maximum(np.asarray(result.curve.max_lsb, dtype=float), FLOOR_LSB)
    ax.semilogy(times, values, color="#1f5fa8", linewidth=0.9)
    ax.axhline(verdict.ROUNDING_LSB, color="#2e9d4f", linestyle="-", linewidth=0.8, label=words["rounding_line"])
    frame_s = SAMPLES_PER_FRAME / SAMPLE_RATE
    for i, f in enumerate(result.official_seams):
        ax.axvline(f * frame_s, color="#d2372c", linestyle="--", linewidth=0.9, label=words["seam"] if i == 0 else None)
        ax.axvspan(f * frame_s, (f + seams.WINDOW_FRAMES) * frame_s, color="#d2372c", alpha=0.08)
    for i, f in enumerate(result.onsets[:20]):
        ax.axvline(f * frame_s, color="#d9a400", linestyle=":", linewidth=1.0, label=words["onset"] if i == 0 else None)
    if result.clicks:
        ax.plot(
            [c.time_s for c in result.clicks],
            [max(c.height_lsb, FLOOR_LSB) for c in result.clicks],
            "v",
            color="#d2372c",
            markersize=6,
            label=words["click"],
        )
    ax.set_xlabel(words["time_axis"])
    ax.set_ylabel(words["error_axis"], fontsize=8)
    ax.set_xlim(0, max(float(times[-1]) if times.size else 1.0, 1e-3) + result.curve.window_s)
    ax.set_ylim(FLOOR_LSB / 2, max(float(values.max()) * 2, verdict.ROUNDING_LSB * 4))
    ax.grid(True, which="major", alpha=0.3)
    # above the plot, never over it: inside, it covered a click at the clip's start
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=4, fontsize=7, frameon=False, borderaxespad=0.2)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.88, bottom=0.16)
    return fig


def curve_png(result, path, labels: dict | None = None) -> Path:
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    with matplotlib.rc_context({"font.family": [f for f in FONTS if f in installed] or ["sans-serif"]}):
        return figure_to_png(curve_figure(result, labels), path)


def html_page(
    result,
    png: Path,
    words: dict | None = None,
    labels: dict | None = None,
    lang: str = "en",
    random_weights: bool = False,
) -> str:
    """The page of one check; ``words``: the sentence table (``ENGLISH`` by default), ``labels`` the fixed words."""
    table, fixed = words or ENGLISH, {**LABELS, **(labels or {})}
    v = result.verdict
    kind = {"identical": "green", "rounding": "green", "differs": "red"}.get(v.kind, "unknown")
    e = html.escape
    rows = [
        (fixed["frames"], result.frames),
        (fixed["offset"], result.alignment.offset_samples),
        (fixed["length"], result.length_difference),
        (fixed["correlation"], "n/a" if np.isnan(result.correlation) else f"{result.correlation:.6f}"),
        (
            fixed["snr"],
            "∞" if np.isinf(result.snr_db) else "n/a" if np.isnan(result.snr_db) else f"{result.snr_db:.2f}",
        ),
        (fixed["max"], f"{result.max_abs_lsb:.3f}"),
        (fixed["first"], "—" if result.first_difference_s is None else f"{result.first_difference_s:.4f}"),
    ]
    measures = "".join(f"<tr><th>{e(str(k))}</th><td>{e(str(x))}</td></tr>" for k, x in rows)
    clicks = (
        "".join(
            f"<tr><td>{c.time_s:.4f}</td><td>{c.height_lsb:.0f}</td><td>{e(where(c.seam, table))}</td></tr>"
            for c in result.clicks
        )
        or f"<tr><td colspan=3>{e(fixed['none'])}</td></tr>"
    )
    notes = "".join(f"<li>{e(say(n.code, n.fields, table))}</li>" for n in v.evidence)
    caveat = f'<p class="caveat">{e(fixed["random"])}</p>' if random_weights else ""
    body = (
        f"<h1>{e(fixed['title'])}</h1>{caveat}"
        f'<p class="verdict {kind}" id="parity-verdict">{e(say(v.headline.code, v.headline.fields, table))}</p>'
        f"<h2>{e(fixed['notes'])}</h2><ul>{notes}</ul>"
        f'<figure><img alt="{e(fixed["figure_title"])}" src="{data_url(png)}"></figure>'
        f"<h2>{e(fixed['measures'])}</h2><table>{measures}</table>"
        f"<h2>{e(fixed['clicks'])}</h2><table><tr><th>{e(fixed['time'])}</th><th>{e(fixed['height'])}</th>"
        f"<th>{e(fixed['where'])}</th></tr>{clicks}</table>"
    )
    return page(fixed["title"], body, lang)


def write_report(
    result,
    folder: Path,
    stem: str,
    words: dict | None = None,
    labels: dict | None = None,
    lang: str = "en",
    random_weights: bool = False,
) -> tuple[Path, Path]:
    """``{stem}_parity.png`` and ``{stem}_parity.html`` (new files) in ``folder``."""
    folder = Path(folder)
    png = curve_png(result, folder / f"{stem}_parity.png", labels)
    path = folder / f"{stem}_parity.html"
    with open(path, "x", encoding="utf-8") as f:
        f.write(html_page(result, png, words, labels, lang, random_weights))
    return png, path
