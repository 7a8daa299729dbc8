"""The verdict card: the one answer a demo needs, right under *Encode → Decode*.

A sentence in words, coloured by CSS (never an emoji a font may lack), a plain reason per voting
signal a non-engineer reads ("speech stays as easy to understand as the original", "it sounds like
the same speaker"), worst first, and the numbers behind it one click away (a ``<details>``), each
with the anchors' values on this clip beside it ("Phone call (AMR-NB 12.2 kbit/s): 0.81") once the
table of every source is in. Three states: *measuring* (right after the round
trip), *preliminary* (the metrics are in: a light from the metrics alone, and an honest estimate of
when the listener-score model will be done), *final* (``core.judging.verdict``'s dict). The lights
are ``core.judging.verdict``'s (its dict's ``lights``, or :func:`core.judging.verdict.combine` of the
values for a dict without them): the card renders them and judges nothing itself. The signals, their
order and bounds are rows of ``core.analysis.catalog``. Pure functions of plain data; every sentence
in the page's language.
"""

from __future__ import annotations

import html
import math

from core.analysis import catalog
from core.codec import SAMPLE_RATE
from core.judging import verdict
from core.judging.sources import ANCHOR
from webui.i18n import text
from webui.views import compare_view
from webui.views.formatting import clock

SIGNALS = catalog.ids(catalog.VOTERS_ON_CARD)  # the verdict's signals, in the order a listener cares
SHOWN = catalog.ids(catalog.CARD)  # the rows of the card's numbers: the signals, then those without bounds
_LEVELS = (*verdict.LEVELS, "unknown")


def _esc(value) -> str:
    return html.escape(str(value))


def values_and_lights(v: dict | None, metrics: dict[str, float | None]) -> tuple[dict, dict[str, str]]:
    """({signal id: value or None}, {signal id: light}) of the verdict ``v``: its own when it carries
    them (core.judging.verdict's dict), else core's :func:`~core.judging.verdict.combine` of
    ``metrics`` and ``v``'s two MOS predictions (a dict from before the verdict carried its lights)."""
    v = v or {}
    if isinstance(v.get("values"), dict) and isinstance(v.get("lights"), dict):
        return v["values"], {k: str(light) for k, light in v["lights"].items() if light in verdict.LEVELS}
    found = verdict.combine(metrics, v.get("mos_original"), v.get("mos_reconstruction"), random_weights=False)
    return found.values, found.lights


def beside(comparison: dict | None, lang: str) -> dict[str, list[tuple[str, float]]]:
    """{metric id: [(anchor's name, its value), ...]} from the table of every source of this clip
    (``webui.jobs.compare``'s result: {"table": SourceTable.to_dict(), ...}), for the card's rows."""
    table = (comparison or {}).get("table") if isinstance(comparison, dict) else None
    out: dict[str, list[tuple[str, float]]] = {}
    for column in (table or {}).get("columns") or []:
        if column.get("source", {}).get("kind") != ANCHOR:
            continue
        label = compare_view.source_label(column["source"], lang)
        for name in SHOWN:
            value = (column.get("values") or {}).get(name)
            if isinstance(value, int | float) and math.isfinite(value):
                out.setdefault(name, []).append((label, float(value)))
    return out


def reasons(signal_lights: dict[str, str], lang: str, limit: int = 3, alone: bool = True) -> list[str]:
    """Plain reasons, worst first (ties in the card's order), at most ``limit``; ``alone`` False: without
    those the card says on a line of their own (:func:`alone_lines`)."""
    ordered = sorted(
        (
            kv
            for kv in signal_lights.items()
            if kv[0] in catalog.BY_ID and (alone or not catalog.BY_ID[kv[0]].said_alone)
        ),
        key=lambda kv: (-verdict.LEVELS.index(kv[1]), SIGNALS.index(kv[0]) if kv[0] in SIGNALS else len(SIGNALS)),
    )
    return [text(f"metrics.reason.{catalog.BY_ID[name].key}.{light}", lang) for name, light in ordered[:limit]]


def alone_lines(signal_lights: dict[str, str], lang: str) -> list[tuple[str, str, str]]:
    """(metric id, light, plain reason) of each signal the card says on a line of its own ("It sounds like
    the same speaker."), in the card's order; those without a light (no value) are not said."""
    return [
        (name, signal_lights[name], text(f"metrics.reason.{catalog.BY_ID[name].key}.{signal_lights[name]}", lang))
        for name in SIGNALS
        if catalog.BY_ID[name].said_alone and signal_lights.get(name) in verdict.LEVELS
    ]


def _numbers(values: dict, signal_lights: dict, lang: str, extra: list[str], anchors: dict | None = None) -> str:
    """The numbers behind the card, folded: a row per signal (and per card row without bounds), each
    followed by the anchors' values on this clip when they are known."""
    rows = []
    for name in SHOWN:
        value = values.get(name)
        row = catalog.BY_ID[name]
        if not row.votes and value is None:  # a model that was not chosen: no row
            continue
        if row.votes:
            bounds = "verdict.bounds_higher" if row.higher_is_better else "verdict.bounds_lower"
            bound = text(bounds, lang, green=row.green, red=row.red)
        else:
            bound = text("verdict.no_bounds", lang)
        shown = "–" if value is None else f"{value:.2f}"
        light = signal_lights.get(name)
        word = text(f"verdict.light.{light}", lang) if light else text("verdict.not_available", lang)
        if not row.votes and value is not None:
            word = text("verdict.no_light", lang)
        rows.append(
            f"<tr data-metric='{_esc(name)}'><th scope='row'>{_esc(text(f'metrics.signal.{row.key}', lang))}</th>"
            f"<td>{_esc(shown)}</td><td>{_esc(bound)}</td><td class='cw-light-{light or 'none'}'>{_esc(word)}</td></tr>"
        )
        if beside_values := (anchors or {}).get(name):
            said = ", ".join(text("metrics.beside_item", lang, label=lb, value=f"{v:.2f}") for lb, v in beside_values)
            rows.append(
                f"<tr class='cw-beside' data-beside='{_esc(name)}'><td colspan='4'>"
                f"{_esc(text('metrics.beside', lang, values=said))}</td></tr>"
            )
    head = "".join(
        f"<th scope='col'>{_esc(text(k, lang))}</th>"
        for k in ("verdict.col.signal", "verdict.col.value", "verdict.col.bounds", "verdict.col.light")
    )
    notes = "".join(f"<p>{_esc(line)}</p>" for line in extra)
    return (
        f"<details class='cw-numbers'><summary>{_esc(text('verdict.numbers', lang))}</summary>"
        f"<div class='cw-table-wrap'><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        f"{notes}</details>"
    )


def _card(
    level: str,
    title: str,
    body: list[str],
    numbers: str,
    lang: str,
    state: str,
    caveat: bool,
    lead: str = "",
    placing: str = "",
    alone: list[tuple[str, str, str]] | None = None,
) -> str:
    items = "".join(f"<li>{_esc(line)}</li>" for line in body)
    lead_html = f"<p class='cw-card-lead'>{_esc(lead)}</p>" if lead else ""
    for name, light, line in alone or []:  # "same voice?" on its own line, coloured by its light
        lead_html += f"<p class='cw-card-alone cw-light-{light}' data-metric='{_esc(name)}'>{_esc(line)}</p>"
    if placing:  # where the codec stands among the other sources of this clip (webui.views.compare_view)
        lead_html += f"<p class='cw-card-placing'>{_esc(placing)}</p>"
    reasons_html = f"<ul class='cw-reasons'>{items}</ul>" if items else ""
    warn = f"<p class='cw-card-caveat' role='note'>{_esc(text('verdict.random_caveat', lang))}</p>" if caveat else ""
    bar = "<div class='cw-card-bar' aria-hidden='true'><span></span></div>" if state != "final" else ""
    return (
        f"<section class='cw-card cw-card-{level} cw-card-{state}' data-level='{level}' data-state='{state}' "
        f"aria-live='polite' aria-label='{_esc(text('verdict.card_label', lang))}'>"
        f"<div class='cw-card-head'><span class='cw-dot' aria-hidden='true'></span>"
        f"<h2 class='cw-card-title'>{_esc(title)}</h2></div>{lead_html}{bar}"
        f"{reasons_html}{warn}{numbers}</section>"
    )


def _khz(hz) -> str:
    return f"{float(hz) / 1000:g} kHz"


def rates_lines(rates: dict | None, lang: str) -> list[str]:
    """What each decoder writes and the rate everything was compared at (a round trip's ``rates``:
    webui.jobs.codec.rates_of), when a decoder writes anything but 24 kHz; none for the 24 kHz codec alone."""
    rates = rates if isinstance(rates, dict) else {}
    first, second = rates.get("output_rate_hz"), rates.get("second_output_rate_hz")
    compared = rates.get("compared_at_hz")
    if not isinstance(first, int | float) or not isinstance(compared, int | float):
        return []
    if {first, second or first, compared} == {SAMPLE_RATE}:
        return []
    lines = [text("verdict.rates.first", lang, rate=_khz(first))]
    if isinstance(second, int | float):
        lines.append(text("verdict.rates.second", lang, rate=_khz(second)))
    top = float(rates.get("original_top_hz") or SAMPLE_RATE / 2)
    lines.append(text("verdict.rates.compared", lang, rate=_khz(compared), top=_khz(top)))
    if top <= SAMPLE_RATE / 2:
        original = rates.get("original_rate_hz") or SAMPLE_RATE
        lines.append(text("verdict.rates.no_band", lang, original=_khz(original)))
    return lines


def measuring(lang: str, random_weights: bool) -> str:
    """Right after the round trip: the metrics are being measured."""
    return _card("unknown", text("verdict.measuring", lang), [], "", lang, "measuring", random_weights)


def preliminary(metrics: dict, estimate_s: float | None, judged: str, lang: str, random_weights: bool) -> str:
    """The metrics are in: a light from the metrics alone (core's), and when the final verdict will come."""
    found = verdict.combine(metrics, None, None, random_weights=False)
    values, signal_lights, level = found.values, found.lights, found.level
    title = text("verdict.preliminary", lang, words=text(f"verdict.{level}", lang))
    waiting = (
        text("verdict.waiting_about", lang, seconds=f"{max(1, round(estimate_s))}", judged=judged)
        if estimate_s is not None
        else text("verdict.waiting", lang, judged=judged)
    )
    body = [*reasons(signal_lights, lang, limit=2, alone=False), waiting]
    values = {**{k: metrics.get(k) for k in SHOWN}, **values}
    numbers = _numbers(values, signal_lights, lang, [])
    alone = alone_lines(signal_lights, lang)
    return _card(level, title, body, numbers, lang, "preliminary", random_weights, alone=alone)


def final(
    v: dict,
    metrics: dict,
    judged: str,
    lang: str,
    placing: str = "",
    anchors: dict | None = None,
    rates: dict | None = None,
) -> str:
    """The verdict: ``v`` is core.judging.verdict's dict, ``metrics`` the values it was given;
    ``placing``: where the codec stands among the clip's other sources, in words ("" until known);
    ``anchors``: :func:`beside` of the table of every source (None until it is in); ``rates``: the round
    trip's rates (named on the card when a decoder writes other than 24 kHz)."""
    values, signal_lights = values_and_lights(v, metrics)
    values = {**{k: metrics.get(k) for k in SHOWN}, **values}  # rows without bounds: the metrics' own
    level = str(v["level"]) if v.get("level") in _LEVELS else verdict.worst(signal_lights)
    body = reasons(signal_lights, lang, alone=False) if signal_lights else []  # the title already says it cannot judge
    if not body and level != "unknown":
        body = [text("verdict.unknown", lang)]
    lead = text(f"verdict.sentence.{level}", lang) if level != "unknown" else ""
    extra = [text("verdict.judged", lang, judged=judged)]
    if v.get("mos_original") is not None and v.get("mos_reconstruction") is not None:
        extra.append(text("verdict.mos", lang, original=v["mos_original"], reconstruction=v["mos_reconstruction"]))
    if v.get("seconds") is not None:
        extra.append(text("verdict.took", lang, seconds=f"{v['seconds']:.1f}"))
    numbers = _numbers(values, signal_lights, lang, extra, anchors)
    caveat = bool(v.get("caveat"))
    alone = alone_lines(signal_lights, lang)
    card = _card(level, text(f"verdict.{level}", lang), body, numbers, lang, "final", caveat, lead, placing, alone)
    said = "".join(f"<p class='cw-card-rates'>{_esc(line)}</p>" for line in rates_lines(rates, lang))
    return card.replace("</div>", f"</div>{said}", 1) if said else card  # under the title


def judged_words(v: dict | None, duration_s: float, lang: str) -> str:
    """Which audio the listener-score model heard, from the verdict dict's windows when it has them."""
    windows = (v or {}).get("windows") or []
    spans = []
    for w in windows:
        start, end = (w["start_s"], w["end_s"]) if isinstance(w, dict) else (w[0], w[1])
        spans.append((float(start), float(end)))
    if not spans or (len(spans) == 1 and spans[0][0] <= 0.0 and spans[0][1] >= duration_s - 1e-3):
        return text("verdict.judged_whole", lang, duration=clock(duration_s))
    length = max(end - start for start, end in spans)
    return text(
        "verdict.judged_windows",
        lang,
        count=len(spans),
        length=f"{length:g}",
        starts=", ".join(clock(start) for start, _ in spans),
        duration=clock(duration_s),
    )
