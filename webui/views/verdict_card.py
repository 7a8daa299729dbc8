"""The verdict card: the one answer a demo needs, right under *Encode → Decode*.

A sentence in words, coloured by CSS (never an emoji a font may lack), one to three plain reasons
a non-engineer reads ("speech stays as easy to understand as the original"), and the numbers
behind it one click away (a ``<details>``). Three states: *measuring* (right after the round
trip), *preliminary* (the metrics are in: a light from the metrics alone, and an honest estimate of
when the listener-score model will be done), *final* (``core.judging.verdict``'s dict). The lights
are ``core.judging.verdict``'s (its dict's ``lights``, or :func:`core.judging.verdict.combine` of the
values for a dict without them): the card renders them and judges nothing itself. The signals, their
order and bounds are rows of ``core.analysis.catalog``. Pure functions of plain data; every sentence
in the page's language.
"""

from __future__ import annotations

import html

from core.analysis import catalog
from core.judging import verdict as judging
from webui.i18n import text
from webui.views.formatting import clock

SIGNALS = catalog.ids(catalog.CARD)  # the verdict's signals, in the order a listener cares
_LEVELS = (*judging.LEVELS, "unknown")


def _esc(value) -> str:
    return html.escape(str(value))


def values_and_lights(v: dict | None, metrics: dict[str, float | None]) -> tuple[dict, dict[str, str]]:
    """({signal id: value or None}, {signal id: light}) of the verdict ``v``: its own when it carries
    them (core.judging.verdict's dict), else core's :func:`~core.judging.verdict.combine` of
    ``metrics`` and ``v``'s two MOS predictions (a dict from before the verdict carried its lights)."""
    v = v or {}
    if isinstance(v.get("values"), dict) and isinstance(v.get("lights"), dict):
        return v["values"], {k: str(light) for k, light in v["lights"].items() if light in judging.LEVELS}
    found = judging.combine(metrics, v.get("mos_original"), v.get("mos_reconstruction"), random_weights=False)
    return found.values, found.lights


def reasons(signal_lights: dict[str, str], lang: str, limit: int = 3) -> list[str]:
    """Plain reasons, worst first (ties in the card's order), at most ``limit``."""
    ordered = sorted(
        (kv for kv in signal_lights.items() if kv[0] in catalog.BY_ID),
        key=lambda kv: (-judging.LEVELS.index(kv[1]), SIGNALS.index(kv[0]) if kv[0] in SIGNALS else len(SIGNALS)),
    )
    return [text(f"verdict.reason.{catalog.BY_ID[name].key}.{light}", lang) for name, light in ordered[:limit]]


def _numbers(values: dict, signal_lights: dict, lang: str, extra: list[str]) -> str:
    """The numbers behind the card, folded."""
    rows = []
    for name in SIGNALS:
        value = values.get(name)
        row = catalog.BY_ID[name]
        bounds = "verdict.bounds_higher" if row.higher_is_better else "verdict.bounds_lower"
        bound = text(bounds, lang, green=row.green, red=row.red)
        shown = "–" if value is None else f"{value:.2f}"
        light = signal_lights.get(name)
        word = text(f"verdict.light.{light}", lang) if light else text("verdict.not_available", lang)
        rows.append(
            f"<tr><th scope='row'>{_esc(text(f'verdict.signal.{row.key}', lang))}</th>"
            f"<td>{_esc(shown)}</td><td>{_esc(bound)}</td><td class='cw-light-{light or 'none'}'>{_esc(word)}</td></tr>"
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
) -> str:
    items = "".join(f"<li>{_esc(line)}</li>" for line in body)
    lead_html = f"<p class='cw-card-lead'>{_esc(lead)}</p>" if lead else ""
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


def measuring(lang: str, random_weights: bool) -> str:
    """Right after the round trip: the metrics are being measured."""
    return _card("unknown", text("verdict.measuring", lang), [], "", lang, "measuring", random_weights)


def preliminary(metrics: dict, estimate_s: float | None, judged: str, lang: str, random_weights: bool) -> str:
    """The metrics are in: a light from the metrics alone (core's), and when the final verdict will come."""
    found = judging.combine(metrics, None, None, random_weights=False)
    values, signal_lights, level = found.values, found.lights, found.level
    title = text("verdict.preliminary", lang, words=text(f"verdict.{level}", lang))
    waiting = (
        text("verdict.waiting_about", lang, seconds=f"{max(1, round(estimate_s))}", judged=judged)
        if estimate_s is not None
        else text("verdict.waiting", lang, judged=judged)
    )
    body = [*reasons(signal_lights, lang, limit=2), waiting]
    return _card(level, title, body, _numbers(values, signal_lights, lang, []), lang, "preliminary", random_weights)


def final(v: dict, metrics: dict, judged: str, lang: str, placing: str = "") -> str:
    """The verdict: ``v`` is core.judging.verdict's dict, ``metrics`` the values it was given;
    ``placing``: where the codec stands among the clip's other sources, in words ("" until known)."""
    values, signal_lights = values_and_lights(v, metrics)
    level = str(v["level"]) if v.get("level") in _LEVELS else judging.worst(signal_lights)
    body = reasons(signal_lights, lang) if signal_lights else []  # the title already says it cannot judge (issue 29)
    if not body and level != "unknown":
        body = [text("verdict.unknown", lang)]
    lead = text(f"verdict.sentence.{level}", lang) if level != "unknown" else ""
    extra = [text("verdict.judged", lang, judged=judged)]
    if v.get("mos_original") is not None and v.get("mos_reconstruction") is not None:
        extra.append(text("verdict.mos", lang, original=v["mos_original"], reconstruction=v["mos_reconstruction"]))
    if v.get("seconds") is not None:
        extra.append(text("verdict.took", lang, seconds=f"{v['seconds']:.1f}"))
    numbers = _numbers(values, signal_lights, lang, extra)
    caveat = bool(v.get("caveat"))
    return _card(level, text(f"verdict.{level}", lang), body, numbers, lang, "final", caveat, lead, placing)


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
