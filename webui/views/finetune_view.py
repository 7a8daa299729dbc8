"""The Fine-tune tab in the reader's language: the plan before a run, the progress line while it
runs (step, loss, held-out distance, time run and left) and how it ended, and the loss curve (the
train loss and the held-out distance, each on its own axis) as an inline SVG that grows with the run.
Random weights say nothing about quality: every figure comes with the warning when they are random."""

from __future__ import annotations

import html

from core.training.data import MAX_HEADERS
from webui.i18n import DEFAULT_LANGUAGE, catalogues, text
from webui.jobs import finetune_runs
from webui.jobs.finetune_runs import RunState
from webui.views import words

WIDTH, HEIGHT = 880, 260  # the curve's drawing box (it scales to the column's width)
LEFT, RIGHT, TOP, BOTTOM = 52, 52, 34, 30  # margins: the axes' numbers and the legend
TRAIN_COLOUR, VAL_COLOUR = "#2563eb", "#c2410c"  # blue and orange: apart for the common colour blindnesses


def clock(seconds: float) -> str:
    """A wait or an amount of audio as a person reads it: 0:07, 12:40, 1:02:10."""
    whole = max(0, int(round(float(seconds))))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _number(value) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _warning(lang: str) -> str:
    return f"<div class='cw-fix cw-ft-random' role='note'>⚠️ {html.escape(text('finetune.random', lang))}</div>"


def plan_html(plan: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    """The plan as a short list: data (clips, audio), held-out clips, memory, precision and why, time."""
    rows = []
    found = plan.get("found") or {}
    clips = found.get("rows", plan.get("clips"))
    timed = found.get("length_unknown") == 0 and isinstance(clips, int) and clips <= MAX_HEADERS
    seconds = found.get("audio_s") if timed else None  # the headers' total, when every file's header was read
    if clips is not None:
        key = "finetune.plan.data" if isinstance(seconds, int | float) else "finetune.plan.data_clips"
        rows.append(text(key, lang, clips=clips, audio=clock(float(seconds or 0.0))))
    held = plan.get("val_clips")
    if isinstance(held, int) and isinstance(clips, int):
        rows.append(text("finetune.plan.split", lang, train=max(clips - held, 0), val=held))
    peak = (plan.get("memory") or {}).get("peak_mib", plan.get("peak_mib"))
    if isinstance(peak, int | float):
        free = plan.get("free_mib")
        key = "finetune.plan.memory_free" if isinstance(free, int | float) else "finetune.plan.memory"
        rows.append(text(key, lang, peak=f"{peak:,.0f}", free=f"{free or 0:,.0f}", device=plan.get("device", "")))
    if plan.get("precision"):
        code = plan.get("precision_why")
        why = (
            text(f"finetune.precision_why.{code}", lang, device=plan.get("precision_device") or "")
            if code
            else str(plan.get("precision_reason") or "")
        )
        rows.append(text("finetune.plan.precision", lang, precision=plan["precision"]) + (f" ({why})" if why else ""))
    estimate = plan.get("estimated_s")
    if isinstance(estimate, int | float) and estimate > 0:
        rows.append(text("finetune.plan.time", lang, time=clock(estimate)))
    else:
        rows.append(text("finetune.plan.time_later", lang))
    items = "".join(f"<li>{html.escape(r)}</li>" for r in rows)
    head = html.escape(text("finetune.plan.heading", lang))
    return f"<div class='cw-ft-plan'><b>{head}</b><ul>{items}</ul></div>"


def refused_html(message: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """Why these choices cannot run (the plan's refusal), where the plan goes."""
    head = html.escape(text("finetune.plan.refused", lang))
    return f"<div class='cw-ft-plan cw-ft-refused' role='alert'><b>{head}</b> {html.escape(message)}</div>"


def status_html(state: RunState, lang: str = DEFAULT_LANGUAGE, random_weights: bool = False) -> str:
    """The run's line: what it does now, or how it ended and why."""
    p = state.progress
    loss = p.train[-1][1] if p.train else None
    val = p.val[-1][1] if p.val else None
    base = p.val[0][1] if p.val else None
    if state.status == finetune_runs.NONE:
        return f"<div class='cw-progress' data-state='none'>{html.escape(text('finetune.status.none', lang))}</div>"
    if state.active:
        key = "finetune.status.stopping" if state.status == finetune_runs.STOPPING else "finetune.status.running"
        line = text(key, lang, step=state.step, steps=state.steps)
        figures = []
        if loss is not None:
            figures.append(text("finetune.status.loss", lang, loss=_number(loss)))
        if val is not None:
            figures.append(text("finetune.status.val", lang, val=_number(val), base=_number(base)))
        times = text("finetune.status.elapsed", lang, elapsed=clock(state.elapsed_s))
        left = state.left_s
        times += " · " + (
            text("finetune.status.left", lang, left=clock(max(1.0, left)))
            if left is not None
            else text("finetune.status.left_unknown", lang)
        )
        percent = max(0, min(100, round(100 * state.step / state.steps))) if state.steps else 0
        return (
            f"<div class='cw-progress' data-state='{state.status}' data-step='{state.step}' role='status'>"
            f"<div class='cw-progress-line'><b>{html.escape(line)}</b> <span class='cw-progress-pc'>{percent}%</span></div>"
            f"<div class='cw-progress-bar' role='progressbar' aria-valuemin='0' aria-valuemax='100' "
            f"aria-valuenow='{percent}' aria-label='{html.escape(line)}'><span style='width:{percent}%'></span></div>"
            f"<div class='cw-progress-times'>{html.escape(' · '.join([*figures, times]))}</div></div>"
            + (_warning(lang) if random_weights and figures else "")
        )
    return _ended(state, lang, random_weights, val, base)


def _ended(state: RunState, lang: str, random_weights: bool, val, base) -> str:
    steps = state.result.get("steps", state.step)
    took = clock(state.elapsed_s)
    if state.status == finetune_runs.DONE:
        line = text("finetune.status.done", lang, steps=steps, took=took)
    elif state.status == finetune_runs.STOPPED:
        key = "finetune.status.stopped" if state.has_model else "finetune.status.stopped_no_model"
        line = text(key, lang, steps=steps)
    elif state.status == finetune_runs.FAILED:
        line = text("finetune.status.failed", lang, why=_why(state.message, lang))
    else:
        line = text("finetune.status.ended", lang, why=_why(state.message, lang))
    lines = [line]
    if val is not None and base is not None and state.status in (finetune_runs.DONE, finetune_runs.STOPPED):
        change = (val - base) / base * 100 if base else 0.0
        lines.append(
            text("finetune.status.val_change", lang, base=_number(base), val=_number(val), change=f"{change:+.0f}")
        )
    if state.has_model:
        lines.append(text("finetune.status.compare_hint", lang))
    body = "".join(f"<div class='cw-progress-line'>{html.escape(x)}</div>" for x in lines)
    warn = _warning(lang) if random_weights and len(lines) > 1 else ""
    return f"<div class='cw-progress cw-ft-ended' data-state='{state.status}' role='status'>{body}</div>{warn}"


def _why(message: str, lang: str) -> str:
    """The trainer's (English) sentence in the reader's language where known; never empty."""
    message = (message or "").strip()
    return words.sentence(message, lang) if message else text("finetune.status.no_reason", lang)


def series_name(name: str, lang: str) -> str:
    """A loss or held-out metric of the trainer in words where the catalogue has them, else its id."""
    key = f"finetune.series.{name}"
    return text(key, lang) if key in catalogues()[DEFAULT_LANGUAGE] else (name or "–")


def curve_svg(state: RunState, lang: str = DEFAULT_LANGUAGE) -> str:
    """The train loss (left axis) and the held-out distance (right axis, the base's at step 0) by step."""
    p = state.progress
    train_label = text("finetune.curve.train", lang, name=series_name(p.train_name, lang))
    val_label = text("finetune.curve.val", lang, name=series_name(p.val_name, lang))
    if not p.train and not p.val:
        empty = html.escape(text("finetune.curve.empty", lang))
        return f"<div class='cw-ft-curve cw-ft-curve-empty' id='finetune-curve-box'><p>{empty}</p></div>"
    last = max([s for s, _ in p.train] + [s for s, _ in p.val] + [state.steps, 1])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(step: float) -> float:
        return LEFT + plot_w * step / last

    def scale(values: list[float]):
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
        return (lambda v: TOP + plot_h * (hi - v) / (hi - lo)), lo, hi

    parts = [
        f"<rect x='{LEFT}' y='{TOP}' width='{plot_w}' height='{plot_h}' class='cw-ft-plot'/>",
        f"<text x='{LEFT}' y='{HEIGHT - 8}' class='cw-ft-axis'>0</text>",
        f"<text x='{WIDTH - RIGHT}' y='{HEIGHT - 8}' text-anchor='end' class='cw-ft-axis'>{last}</text>",
        f"<text x='{WIDTH / 2}' y='{HEIGHT - 8}' text-anchor='middle' class='cw-ft-axis'>"
        f"{html.escape(text('finetune.curve.step', lang))}</text>",
    ]
    for series, colour, side in (
        (p.train, TRAIN_COLOUR, "left"),
        (p.val, VAL_COLOUR, "right"),
    ):
        if not series:
            continue
        y, lo, hi = scale([v for _, v in series])
        points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in series)
        anchor, at = ("end", LEFT - 6) if side == "left" else ("start", WIDTH - RIGHT + 6)
        parts.append(f"<polyline points='{points}' fill='none' stroke='{colour}' stroke-width='2'/>")
        if series is p.val:
            parts += [f"<circle cx='{x(s):.1f}' cy='{y(v):.1f}' r='3' fill='{colour}'/>" for s, v in series]
        parts += [
            f"<text x='{at}' y='{TOP + 10}' text-anchor='{anchor}' fill='{colour}' class='cw-ft-axis'>{_number(hi)}</text>",
            f"<text x='{at}' y='{TOP + plot_h}' text-anchor='{anchor}' fill='{colour}' class='cw-ft-axis'>{_number(lo)}</text>",
        ]
    legend_y = 16
    parts.append(
        f"<text x='{LEFT}' y='{legend_y}' fill='{TRAIN_COLOUR}' class='cw-ft-legend'>— {html.escape(train_label)}</text>"
    )
    parts.append(
        f"<text x='{WIDTH - RIGHT}' y='{legend_y}' text-anchor='end' fill='{VAL_COLOUR}' class='cw-ft-legend'>"
        f"●— {html.escape(val_label)}</text>"
    )
    summary = text(
        "finetune.curve.summary",
        lang,
        points=len(p.train),
        step=p.train[-1][0] if p.train else 0,
        loss=_number(p.train[-1][1]) if p.train else "–",
        val=_number(p.val[-1][1]) if p.val else "–",
    )
    return (
        f"<div class='cw-ft-curve' id='finetune-curve-box'><svg id='finetune-curve-svg' viewBox='0 0 {WIDTH} {HEIGHT}' "
        f"role='img' aria-label='{html.escape(summary)}' data-points='{len(p.train)}' data-val-points='{len(p.val)}'>"
        f"<title>{html.escape(summary)}</title>{''.join(parts)}</svg></div>"
    )
