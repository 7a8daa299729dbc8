"""The comparison in the reader's language: source names, the one table (a column per source), where
the codec stands among them, the anchors that could not be made, and the two checkpoints' codes."""

from __future__ import annotations

import html

from core.judging import source_table
from core.judging.sources import ANCHOR, CHECKPOINT, CODEC, CODEC_BPS, LEVEL, ORIGINAL, checkpoint
from core.model.second import FAILED, LOADING
from core.units import seconds_short_of
from webui import i18n
from webui.views.formatting import metric_name


def source_label(source: dict, lang: str) -> str:
    """A source's name on its button and in its column: "Opus 6 kbit/s", "第二个检查点（2.2 kbit/s）"."""
    kind, sid = source.get("kind"), source["id"]
    rate = source.get("bitrate_bps") or CODEC_BPS
    if kind == LEVEL:
        k = int(sid[1:])
        return i18n.text("lab.source.level", lang, k=k, bitrate=f"{rate:g}")
    if kind == ANCHOR and f"compare.source.{sid}" in i18n.catalogues()[i18n.DEFAULT_LANGUAGE]:
        return i18n.text(f"compare.source.{sid}", lang)
    if kind in (CODEC, CHECKPOINT):
        key = "compare.source.reconstruction" if kind == CODEC else "compare.source.compare"
        said = i18n.text(key, lang, bitrate=f"{rate / 1000:g}")
        folder = str(source.get("label") or "")
        if kind == CHECKPOINT and folder and folder not in (checkpoint().label, sid):  # not the catalogue's default
            said += f" · {folder}"  # its folder's name: which checkpoint this is
        return said
    if kind == ORIGINAL:
        return i18n.text("compare.source.original", lang)
    return str(source.get("label") or sid)


def _cell(row: str, value) -> str:
    if value is None:
        return "–"
    if row == source_table.BITRATE:
        return f"{value / 1000:.1f}"
    return f"{value:.2f}"


def table_markdown(table: dict, lang: str, mos_pending: bool = False) -> str:
    """The table: a header of source names, a row per metric; the note under it."""
    columns = table["columns"]
    names = [html.escape(source_label(c["source"], lang)) for c in columns]
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(columns)]
    for row in table["rows"]:
        name = i18n.text("compare.row.bitrate", lang) if row == source_table.BITRATE else metric_name(row, lang)
        lines.append(f"| {name} | " + " | ".join(_cell(row, c["values"].get(row)) for c in columns) + " |")
    note = i18n.text("compare.table_note", lang, window=f"{source_table.WINDOW_S:g}")
    pending = "\n\n" + i18n.text("compare.mos_pending", lang) if mos_pending else ""
    return i18n.text("compare.heading", lang) + "\n\n" + "\n".join(lines) + "\n\n" + note + pending


def placing_markdown(placing: dict, lang: str, labels: dict[str, str]) -> str:
    """Where the codec stands, as Markdown (escaped) for the page, with the random-weights caveat."""
    text = html.escape(placing_text(placing, lang, labels), quote=False)
    if placing.get("placements") and placing.get("random_weights"):
        text += "\n\n> ⚠️ " + html.escape(i18n.text("compare.placing.random", lang), quote=False)
    return text


def placing_text(placing: dict, lang: str, labels: dict[str, str]) -> str:
    """Where the codec stands, from core.judging.placing's placements, in ``lang`` (not escaped).
    ``labels``: the sources' names by id."""
    placements = placing.get("placements") or []
    if not placements:
        return i18n.text("compare.placing.none", lang)
    parts = []
    for relation in ("closer", "further"):
        names = [labels.get(p["source_id"], p["label"]) for p in placements if p["relation"] == relation]
        if names:
            parts.append(i18n.text(f"compare.placing.{relation}", lang, names=_join(names, lang)))
    for p in placements:
        if p["relation"] == "mixed":
            parts.append(
                i18n.text(
                    "compare.placing.mixed",
                    lang,
                    name=labels.get(p["source_id"], p["label"]),
                    better=", ".join(p["better"]),
                    worse=", ".join(p["worse"]),
                )
            )
    return i18n.text("compare.placing.lead", lang, parts=_join(parts, lang))


def card_placing(comparison: dict | None, lang: str) -> str:
    """The placing as one plain sentence for the verdict card ("" when nothing was placed):
    "On this clip it is closer to the original than Opus 6 kbit/s, further … than a phone call"."""
    if not isinstance(comparison, dict):
        return ""
    placing = comparison.get("placing") or {}
    if not placing.get("placements"):
        return ""
    measured = comparison.get("table") or {}
    labels = {c["source"]["id"]: source_label(c["source"], lang) for c in measured.get("columns") or []}
    return placing_text(placing, lang, labels).replace("**", "")


def _join(items: list[str], lang: str) -> str:
    if len(items) == 1:
        return items[0]
    return i18n.text("compare.placing.sep", lang).join(items[:-1]) + i18n.text("compare.placing.and", lang) + items[-1]


def problems_markdown(problems: list[dict], lang: str, duration_s: float | None = None) -> str:
    """One line per anchor that could not be made, and why."""
    lines = []
    for p in problems or []:
        if p.get("reason") == "no_second":  # webui.jobs.compare.NO_SECOND; state: core.model.second.not_ready
            key = {LOADING: "second.problem_loading", FAILED: "second.problem_failed"}
            said = i18n.text(key.get(str(p.get("state")), "trust.problem.no_second"), lang, error=p.get("error", ""))
            lines.append("> ⚠️ " + html.escape(said, quote=False))
            continue
        label = source_label({"id": p["id"], "kind": ANCHOR, "label": p.get("label")}, lang)
        if p.get("reason") == "too_short":
            line = i18n.text(
                "compare.problem.too_short",
                lang,
                label=label,
                min=f"{p.get('min_seconds', 0):g}",
                duration=seconds_short_of(duration_s or 0.0, float(p.get("min_seconds", 0))),
            )
        elif p.get("reason") == "missing_encoder":
            line = i18n.text("compare.problem.missing_encoder", lang, label=label)
        else:
            line = i18n.text("compare.problem.failed", lang, label=label, detail=p.get("message", ""))
        lines.append("> ⚠️ " + html.escape(line, quote=False))
    return "\n\n".join(lines)


def agreement_markdown(rows: list[dict], lang: str) -> str:
    """Share of codes equal per codebook, first checkpoint against the second ("" without a second)."""
    if not rows:
        return ""
    books, equal = i18n.text("compare.agreement_codebook", lang), i18n.text("compare.agreement_equal", lang)
    lines = [
        i18n.text("compare.agreement_heading", lang),
        "",
        f"| {books} | " + " | ".join(str(r["codebook"]) for r in rows) + " |",
        "|---|" + "---:|" * len(rows),
        f"| {equal} | " + " | ".join(f"{r['equal_share']:.0%}" for r in rows) + " |",
    ]
    return "\n".join(lines)


def report_words(comparison: dict | None, lang: str) -> dict:
    """The comparison's words for the report page in ``lang`` (core.judging.report.sources_block)."""
    placing = (comparison or {}).get("placing") if isinstance(comparison, dict) else None
    words: dict = {
        "other": i18n.text("compare.report.other", lang),
        "table": i18n.text("compare.report.table", lang),
        "metric": i18n.text("compare.report.metric", lang),
        "note": i18n.text("compare.table_note", lang, window=f"{source_table.WINDOW_S:g}"),
    }
    measured = ((comparison or {}).get("table") or comparison or {}) if isinstance(comparison, dict) else {}
    columns = measured.get("columns") or []
    labels = {c["source"]["id"]: source_label(c["source"], lang) for c in columns}
    words["labels"] = labels  # the table's columns and rows in the reader's words (metrics.json keeps core's)
    words["rows"] = {
        row: i18n.text("compare.row.bitrate", lang) if row == source_table.BITRATE else metric_name(row, lang)
        for row in measured.get("rows") or []
    }
    if placing and placing.get("placements") is not None:
        caveat = " " + i18n.text("compare.placing.random", lang) if placing.get("random_weights") else ""
        words["placing"] = placing_text(placing, lang, labels).replace("**", "") + caveat
    return words
