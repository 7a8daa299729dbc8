"""A shared test's pooled results in the reader's language: the sentence for the room, a bar chart
with the 95 % intervals, the per-condition table, the per-listener rows (who was excluded and why)
and the screening rule. Conditions are worded by source id (``webui.tabs.abx.source_words`` rules:
the page's own names), never by stored text.
"""

from __future__ import annotations

import html
import math

from core.listening import mushra_screening, pooled_stats, shared_test_results
from core.listening.mushra import HIDDEN_REFERENCE
from webui import i18n
from webui.views.player_assets import STATIC


def condition_words(condition: str, lang: str, name_of) -> str:
    """The hidden reference is named as such; every other condition by its source's name."""
    return i18n.text("share.hidden_reference", lang) if condition == HIDDEN_REFERENCE else name_of(condition)


def mushra_sentence(pooled: shared_test_results.MushraPooled, lang: str, name_of) -> str:
    """ "7 listeners, 6 kept: the codec was rated 'good' (71 ± 8), ..." in ``lang``."""
    if not pooled.listeners:
        return i18n.text("share.no_answers", lang)
    rows = sorted((r for r in pooled.conditions if r.ci.n), key=lambda r: -r.ci.mean)
    parts = [
        i18n.text(
            "share.rated",
            lang,
            name=condition_words(r.condition, lang, name_of),
            word=i18n.text(f"listen.scale.{r.word}", lang),
            value=shared_test_results.plus_minus(r.ci),
        )
        for r in rows
    ]
    key = "share.kept_included" if pooled.include_excluded and pooled.kept < pooled.listeners else "share.kept"
    head = i18n.text(key, lang, listeners=pooled.listeners, kept=pooled.kept)
    few = (
        i18n.text("share.too_few", lang, min=shared_test_results.MIN_LISTENERS_TO_CONCLUDE)
        if pooled.too_few_to_conclude
        else ""
    )
    return head + i18n.text("share.list_sep", lang).join(parts) + few


def chart(pooled: shared_test_results.MushraPooled, lang: str, name_of) -> str:
    """A bar per condition (0-100) with its interval as a whisker; plain HTML, no image to fetch."""
    bars = []
    for r in pooled.conditions:
        name = html.escape(condition_words(r.condition, lang, name_of))
        if not r.ci.n:
            bars.append(f'<div class="cw-bar-row"><span>{name}</span><div class="cw-bar-track"></div><b>–</b></div>')
            continue
        low = max(0.0, r.ci.low) if math.isfinite(r.ci.half_width) else r.ci.mean
        high = min(100.0, r.ci.high) if math.isfinite(r.ci.half_width) else r.ci.mean
        bars.append(
            f'<div class="cw-bar-row" data-condition="{html.escape(r.condition)}"><span>{name}</span>'
            f'<div class="cw-bar-track"><div class="cw-bar" style="width:{r.ci.mean:.1f}%"></div>'
            f'<div class="cw-whisker" style="left:{low:.1f}%;width:{max(high - low, 0.4):.1f}%"></div></div>'
            f"<b>{html.escape(shared_test_results.plus_minus(r.ci))}</b></div>"
        )
    return f'<div class="cw-bars" role="img" aria-label="{html.escape(i18n.text("share.chart", lang))}">{"".join(bars)}</div>'


def who_label(listener: str, nicknames: dict[str, str]) -> str:
    """ "L2 · ann": the listener's number always first (it is theirs: the server gave it), the nickname
    they typed after it, so a nickname ("L1", another listener's name) cannot pose as another listener."""
    nickname = nicknames.get(listener) or ""
    return f"{listener} · {nickname}" if nickname else listener


def flagged_html(flagged: int, counted: bool, lang: str) -> str:
    """How many answers could not come from listening, and whether they are counted."""
    key = "share.flagged_counted" if counted else "share.flagged_left_out"
    return f'<p class="cw-shared-flagged">{html.escape(i18n.text(key, lang, n=flagged))}</p>'


def mushra_html(pooled: shared_test_results.MushraPooled, nicknames: dict[str, str], lang: str, name_of) -> str:
    """Sentence, chart, listener rows, the rule."""
    rows = []
    for s in pooled.screened:
        why = (
            i18n.text(f"share.excluded_{s.reason.split(',')[0]}", lang)
            if s.excluded
            else i18n.text("share.kept_row", lang)
        )
        who = html.escape(who_label(s.listener, nicknames))
        state = "excluded" if s.excluded else "kept"
        rows.append(
            f'<tr data-state="{state}"><td>{who}</td><td>{s.items}</td><td>{s.reference_low}</td>'
            f"<td>{s.anchor_above}</td><td>{html.escape(why)}</td></tr>"
        )
    head = "".join(
        f"<th>{html.escape(i18n.text(k, lang))}</th>"
        for k in (
            "share.col_listener",
            "share.col_screens",
            "share.col_ref_low",
            "share.col_anchor_above",
            "share.col_state",
        )
    )
    rule = i18n.text("share.rule", lang, min=mushra_screening.REFERENCE_MIN, share=f"{mushra_screening.MAX_SHARE:.0%}")
    return (
        f'<div class="cw-shared-result"><p class="cw-shared-sentence">{html.escape(mushra_sentence(pooled, lang, name_of))}</p>'
        f"{chart(pooled, lang, name_of)}"
        f'<table class="cw-shared-listeners"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        f'<p class="cw-hint cw-shared-rule">{html.escape(rule)}</p></div>'
    )


def abx_html(
    pooled: shared_test_results.AbxPooled, nicknames: dict[str, str], lang: str, pair: tuple[str, str] | None = None
) -> str:
    """What was compared (``pair``: A's and B's names), total correct of total trials with the exact p,
    and each listener's own."""
    compared = (
        f'<p class="cw-shared-compared">{html.escape(i18n.text("share.abx_compared", lang, a=pair[0], b=pair[1]))}</p>'
        if pair
        else ""
    )
    if not pooled.trials:
        return (
            f'<div class="cw-shared-result">{compared}<p>{html.escape(i18n.text("share.no_answers", lang))}</p></div>'
        )
    p = pooled.p_value
    verdict = "can" if p < 0.05 else "probably" if p < 0.10 else "cannot"
    sentence = i18n.text(
        "share.abx_sentence",
        lang,
        listeners=len(pooled.listeners),
        correct=pooled.correct,
        trials=pooled.trials,
        words=i18n.text(f"share.abx_{verdict}", lang),
        p=pooled_stats.p_text(p),
    )
    rows = "".join(
        f"<tr><td>{html.escape(who_label(r.listener, nicknames))}</td><td>{r.correct} / {r.trials}</td>"
        f"<td>{html.escape(pooled_stats.p_text(r.p_value).removeprefix('p = '))}</td></tr>"
        for r in pooled.listeners
    )
    head = "".join(
        f"<th>{html.escape(i18n.text(k, lang))}</th>"
        for k in ("share.col_listener", "share.col_correct", "share.col_p")
    )
    return (
        f'<div class="cw-shared-result">{compared}<p class="cw-shared-sentence">{html.escape(sentence)}</p>'
        f'<table class="cw-shared-listeners"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'
    )


CSS = (STATIC / "shared_test_result.css").read_text(encoding="utf-8")  # the chart and the listener rows
