"""The round trip's offline report page in the reader's language: the renderer the page hands to
``core.judging.report.build_roundtrip_report`` (whose own renderer writes English for the CLI).
It builds with core's pieces (embedded audio and pictures, tables, the page's style) and says the
verdict with the card's words (``webui.views.verdict_card``)."""

from __future__ import annotations

import html
from pathlib import Path

from core.judging import report
from core.judging import verdict as judging_verdict
from webui.i18n import text
from webui.views import verdict_card, words
from webui.views.formatting import metric_name

ENVIRONMENT_ROWS = ("model", "random_weights", "device", "dtype", "versions", "timings_s")  # environment() keys
TIMING_KEYS = (  # the round trip's timings (webui.jobs.codec, webui.tabs.review) by name
    "encode_s",
    "decode_s",
    "model_s",
    "total_s",
    "ui_s",
    "compare_s",
    "anchors_s",
    "metrics_s",
    "verdict_s",
)


def _esc(value) -> str:
    return html.escape(str(value))


def _verdict_block(v: dict | None, metrics: list[dict], lang: str) -> str:
    if not v:
        return f'<p class="verdict unknown">{_esc(text("report.no_verdict", lang))}</p>'
    _values, signal_lights = verdict_card.values_and_lights(v, judging_verdict.metric_values(metrics))
    level = str(v.get("level")) if v.get("level") in ("green", "amber", "red") else "unknown"
    lead = text(f"verdict.sentence.{level}", lang) if level != "unknown" else ""
    reasons = "".join(f"<li>{_esc(r)}</li>" for r in verdict_card.reasons(signal_lights, lang))
    caveat = text("verdict.random_caveat", lang) if v.get("caveat") else ""
    return report.card(level, text(f"verdict.{level}", lang), lead, reasons, "", caveat)


def _environment_words(lang: str) -> dict:
    """core.judging.report.environment_rows's words in ``lang``."""
    out = {key: text(f"report.env.{key}", lang) for key in ENVIRONMENT_ROWS}
    out |= {"yes": text("reportpage.yes", lang), "no": text("reportpage.no", lang)}
    return out | {f"timing.{key}": text(f"reportpage.timing.{key}", lang) for key in TIMING_KEYS}


def _metric_rows(metrics: list[dict], v: dict | None, lang: str) -> list[list]:
    rows = []
    for m in metrics:
        better = text("metrics.higher" if m.get("better") == "higher" else "metrics.lower", lang)
        note = words.sentence(m["note"], lang) if m.get("note") else ""
        rows.append([metric_name(m["name"], lang), m["value"], m.get("unit", ""), better, note])
    predicted = text("report.predicted", lang)
    higher = text("metrics.higher", lang)
    for key, field in (("report.mos_original", "mos_original"), ("report.mos_reconstruction", "mos_reconstruction")):
        rows.append([text(key, lang), (v or {}).get(field), "", higher, predicted])
    return rows


def renderer(lang: str):
    """``render(stem, original_wav, reconstruction_wav, pngs, metrics, verdict, env)`` in ``lang``."""

    def render(
        stem: str,
        original_wav: Path,
        reconstruction_wav: Path,
        pngs: dict[str, Path],
        metrics: list[dict],
        verdict: dict | None,
        env: dict,
    ) -> str:
        title = text("report.title", lang, stem=stem)
        columns = [text(f"report.col.{c}", lang) for c in ("metric", "value", "unit", "better", "note")]
        env_rows = report.environment_rows(env, _environment_words(lang))
        body = [
            f"<h1>{_esc(title)}</h1>",
            _verdict_block(verdict, metrics, lang),
            f"<h2>{_esc(text('report.listen', lang))}</h2><div class='players'>",
            report.audio_tag(original_wav, text("report.original", lang), "original"),
            report.audio_tag(reconstruction_wav, text("report.reconstruction", lang), "reconstruction"),
            f"</div><h2>{_esc(text('report.metrics', lang))}</h2>",
            report.table(_metric_rows(metrics, verdict, lang), columns),
            report.SOURCES_MARK,  # the other sources and the table of every source (core.judging.report)
            f"<h2>{_esc(text('report.pictures', lang))}</h2>",
            *(report.image_tag(path, text(f"report.picture.{key}", lang)) for key, path in pngs.items()),
            f"<h2>{_esc(text('report.environment', lang))}</h2>",
            report.table(env_rows, [text("report.col.what", lang), text("report.col.value", lang)]),
            report.footer(text("report.made_by", lang)),
        ]
        return report.page(title, "\n".join(body), lang)

    return render
