"""The "Check a port" results in the reader's language: the decode verdict with its evidence, the
measurements and clicks, the encode agreement per codebook, the precision table and its recommendation.
Sentences come from ``core.parity.words`` codes, said from the catalogue (``parity.note.<code>``)."""

from __future__ import annotations

import math

from core.parity import report
from core.parity.words import ENGLISH, Note, say
from core.parity.words import where as where_words
from webui import i18n

COLOURS = {
    "identical": "#2e9d4f",
    "rounding": "#2e9d4f",
    "differs": "#d2372c",
    "ok": "#2e9d4f",
    "failed": "#d2372c",
}  # the verdict's dot (a glyph every font has)


def _dot(kind: str) -> str:
    return f'<span style="color:{COLOURS.get(kind, "#888")}">●</span>'


def _cell(text: str) -> str:
    """A Markdown table cell: a "|" in the text would end the cell."""
    return text.replace("|", "\\|")


def words(lang: str) -> dict[str, str]:
    """{code: template} of every finding in ``lang`` (for ``core.parity.words.say`` and the report)."""
    table = i18n.catalogues().get(lang) or i18n.catalogues()[i18n.DEFAULT_LANGUAGE]
    return {code: table[f"parity.note.{code}"] for code in ENGLISH}


def labels(lang: str) -> dict[str, str]:
    """The report's and the figure's fixed words in ``lang``."""
    return {key: i18n.text(f"parity.label.{key}", lang) for key in report.LABELS}


def note(n: Note, lang: str) -> str:
    return say(n.code, n.fields, words(lang))


def decode_markdown(result, lang: str, random_weights: bool = False) -> str:
    """The verdict in bold with its dot, then the evidence as a list (and the random-weights caveat)."""
    v = result.verdict
    head = f"{_dot(v.kind)} **{note(v.headline, lang)}**"
    evidence = "\n".join(f"- {note(n, lang)}" for n in v.evidence)
    caveat = f"\n\n*{i18n.text('parity.label.random', lang)}*" if random_weights else ""
    return f"{head}\n\n{i18n.text('parity.evidence', lang)}\n\n{evidence}{caveat}"


def _number(x: float, digits: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return "∞" if isinstance(x, float) and math.isinf(x) else f"{x:.{digits}f}"


def measures_markdown(result, lang: str) -> str:
    """The measurements, then the clicks (each with where it sits)."""
    fixed = labels(lang)
    rows = [
        (fixed["frames"], str(result.frames)),
        (fixed["offset"], str(result.alignment.offset_samples)),
        (fixed["length"], str(result.length_difference)),
        (fixed["correlation"], _number(result.correlation, 6)),
        (fixed["snr"], _number(result.snr_db, 2)),
        (fixed["max"], _number(result.max_abs_lsb, 3)),
        (fixed["first"], "–" if result.first_difference_s is None else f"{result.first_difference_s:.4f}"),
    ]
    table = (
        i18n.text("parity.m.header", lang) + "\n| --- | --- |\n" + "\n".join(f"| {_cell(k)} | {v} |" for k, v in rows)
    )
    if not result.clicks:
        return table
    sentences = words(lang)
    clicks = "\n".join(
        f"| {c.time_s:.4f} | {c.height_lsb:.0f} | {where_words(c.seam, sentences)} |" for c in result.clicks
    )
    return f"{table}\n\n{i18n.text('parity.clicks_header', lang)}\n| --- | --- | --- |\n{clicks}"


def encode_markdown(result, lang: str) -> str:
    lines = "\n".join(f"- {note(n, lang)}" for n in result.notes)
    rows = "\n".join(f"| {i + 1} | {a:.1%} |" for i, a in enumerate(result.agreement))
    icon = _dot("identical" if result.identical else "differs")
    return f"{icon} {lines.removeprefix('- ')}\n\n{i18n.text('parity.e.header', lang)}\n| --- | --- |\n{rows}"


def sweep_markdown(sweep, lang: str) -> str:
    head = i18n.text("parity.s.title", lang, name=sweep.device_name, device=sweep.device, seconds=sweep.clip_s)
    rows = []
    for r in sweep.rows:
        if r.error:
            rows.append(f"| {r.label} | {i18n.text('parity.s.unavailable', lang)} | | | | | |")
            continue
        snr = _number(r.snr_db, 1) if r.snr_db is not None else "–"
        first = "–" if r.first_difference_frame is None else str(r.first_difference_frame)
        rows.append(
            f"| {r.label} | {r.encode_s:.3f} | {r.decode_s:.3f} | {r.codes_equal:.1%} | {first} | {snr} | {len(r.broken)} / {r.chunks} |"
        )
    header = i18n.text("parity.s.header", lang)
    advice = "\n".join(f"- {note(n, lang)}" for n in sweep.recommendation)
    return (
        f"{head}\n\n{header}\n|{' --- |' * 7}\n"
        + "\n".join(rows)
        + f"\n\n{i18n.text('parity.s.recommendation', lang)}\n\n{advice}"
    )


def stream_verdict_markdown(result, lang: str, random_weights: bool = False) -> str:
    """The stream check's verdict and its finding (and the random-weights caveat)."""
    verdict = i18n.text(f"parity.st.verdict_{result.verdict}", lang)
    caveat = f"\n\n*{i18n.text('parity.label.random', lang)}*" if random_weights else ""
    return f"{_dot(result.verdict)} **{verdict}**: {note(result.finding, lang)}{caveat}"


def stream_measures_markdown(result, lang: str) -> str:
    """The stream check's measurements, the worst seams and the gaps."""
    t = lambda key, **fields: i18n.text(f"parity.st.{key}", lang, **fields)  # noqa: E731
    rows = [
        (t("packets"), f"{result.packets} × {result.packet_frames}"),
        (t("length"), f"{result.their_samples} / {result.our_samples}"),
        (t("drift"), str(result.drift_samples)),
        (t("max"), _number(result.max_lsb, 2)),
        (t("snr"), "∞" if result.snr_db is None else _number(result.snr_db, 1)),
        (t("tail"), _number(result.tail_max_lsb, 2)),
        (t("gaps"), str(len(result.gaps))),
        (t("seams"), str(result.seams_with_clicks)),
    ]
    for context, snr in result.windowed_snr_db.items():
        rows.append((t("windowed", context=context), "∞" if snr is None else _number(snr, 1)))
    listed = "\n".join(f"- {k}: **{v}**" for k, v in rows)  # a list wraps on a phone; a two-column table did not
    parts = [listed]
    if result.worst_seams:
        seams = "\n".join(
            f"| {s.packet + 1} | {s.time_s:.3f} | {s.max_lsb:.1f} | {s.clicks} |" for s in result.worst_seams
        )
        parts.append(f"{t('seams_header')}\n| --- | --- | --- | --- |\n{seams}")
    if result.gaps:
        gaps = "\n".join(f"| {g.time_s:.3f} | {g.ms:.0f} |" for g in result.gaps[:20])
        parts.append(f"{t('gaps_header')}\n| --- | --- |\n{gaps}")
    return "\n\n".join(parts)
