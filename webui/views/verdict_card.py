"""The verdict card: the one answer a demo needs, right under *Encode → Decode*.

A sentence in words, coloured by CSS (never an emoji a font may lack), one to three plain reasons
a non-engineer reads ("speech stays as easy to understand as the original"), and the numbers
behind it one click away (a ``<details>``). Three states: *measuring* (right after the round
trip), *preliminary* (the metrics are in: a light from PESQ and STOI alone, and an honest
estimate of when the listener-score model will be done), *final* (``core.judging.verdict``'s
dict). Pure functions of plain data; every sentence in the page's language.
"""

from __future__ import annotations

import html
import math

from core.judging import verdict as judging
from webui.i18n import text
from webui.views.formatting import clock

MOS_DROP = next(name for name in judging.THRESHOLDS if name.startswith("MOS"))  # core's name of the MOS signal
SIGNALS = ("STOI", "PESQ-WB", MOS_DROP)  # the verdict's signals, in the order a listener cares
_SIGNAL_KEYS = {"STOI": "stoi", "PESQ-WB": "pesq", MOS_DROP: "mos"}
_LEVELS = ("green", "amber", "red", "unknown")


def _esc(value) -> str:
    return html.escape(str(value))


def signal_values(metrics: dict[str, float | None], mos_original=None, mos_reconstruction=None) -> dict:
    """{signal: value or None} for SIGNALS, from the metrics' values and the two MOS predictions."""
    drop = None
    if mos_original is not None and mos_reconstruction is not None:
        drop = mos_original - mos_reconstruction
    return {"STOI": metrics.get("STOI"), "PESQ-WB": metrics.get("PESQ-WB"), MOS_DROP: drop}


def lights(values: dict) -> dict[str, str]:
    """The light of each signal that has a value (the thresholds are core.judging.verdict's)."""
    return {name: judging.light(name, v) for name, v in values.items() if v is not None and math.isfinite(v)}


def level_of(signal_lights: dict[str, str]) -> str:
    """The worst light (the verdict's own rule), or "unknown" with none."""
    ranked = [light for light in signal_lights.values() if light in judging.LEVELS]
    return max(ranked, key=judging.LEVELS.index) if ranked else "unknown"


def reasons(signal_lights: dict[str, str], lang: str, limit: int = 3) -> list[str]:
    """Plain reasons, worst first, at most ``limit``."""
    ordered = sorted(signal_lights.items(), key=lambda kv: -judging.LEVELS.index(kv[1]))
    return [text(f"verdict.reason.{_SIGNAL_KEYS[name]}.{light}", lang) for name, light in ordered[:limit]]


def _numbers(values: dict, signal_lights: dict, lang: str, extra: list[str]) -> str:
    """The numbers behind the card, folded."""
    rows = []
    for name in SIGNALS:
        value = values.get(name)
        green, red, higher = judging.THRESHOLDS[name]
        bound = text("verdict.bounds_higher" if higher else "verdict.bounds_lower", lang, green=green, red=red)
        shown = "–" if value is None else f"{value:.2f}"
        light = signal_lights.get(name)
        word = text(f"verdict.light.{light}", lang) if light else text("verdict.not_available", lang)
        rows.append(
            f"<tr><th scope='row'>{_esc(text(f'verdict.signal.{_SIGNAL_KEYS[name]}', lang))}</th>"
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
    level: str, title: str, body: list[str], numbers: str, lang: str, state: str, caveat: bool, lead: str = ""
) -> str:
    items = "".join(f"<li>{_esc(line)}</li>" for line in body)
    lead_html = f"<p class='cw-card-lead'>{_esc(lead)}</p>" if lead else ""
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
    """The metrics are in: a light from PESQ and STOI alone, and when the final verdict will come."""
    values = signal_values(metrics)
    signal_lights = lights(values)
    level = level_of(signal_lights)
    title = text("verdict.preliminary", lang, words=text(f"verdict.{level}", lang))
    waiting = (
        text("verdict.waiting_about", lang, seconds=f"{max(1, round(estimate_s))}", judged=judged)
        if estimate_s is not None
        else text("verdict.waiting", lang, judged=judged)
    )
    body = [*reasons(signal_lights, lang, limit=2), waiting]
    return _card(level, title, body, _numbers(values, signal_lights, lang, []), lang, "preliminary", random_weights)


def final(v: dict, metrics: dict, judged: str, lang: str) -> str:
    """The verdict: ``v`` is core.judging.verdict's dict, ``metrics`` the values it was given."""
    values = signal_values(metrics, v.get("mos_original"), v.get("mos_reconstruction"))
    signal_lights = lights(values)
    level = str(v["level"]) if v.get("level") in _LEVELS else level_of(signal_lights)
    body = reasons(signal_lights, lang) if signal_lights else [text("verdict.unknown", lang)]
    lead = text(f"verdict.sentence.{level}", lang) if level != "unknown" else ""
    extra = [text("verdict.judged", lang, judged=judged)]
    if v.get("mos_original") is not None and v.get("mos_reconstruction") is not None:
        extra.append(text("verdict.mos", lang, original=v["mos_original"], reconstruction=v["mos_reconstruction"]))
    if v.get("seconds") is not None:
        extra.append(text("verdict.took", lang, seconds=f"{v['seconds']:.1f}"))
    numbers = _numbers(values, signal_lights, lang, extra)
    return _card(level, text(f"verdict.{level}", lang), body, numbers, lang, "final", bool(v.get("caveat")), lead)


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
