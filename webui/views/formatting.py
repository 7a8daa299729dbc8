"""Turn engine results into what the page shows: HTML for the status bar, Markdown for
facts, token summaries, metrics and system stats. Pure functions of plain data."""

from __future__ import annotations

import html
import math
import re

from core.model.readiness import FAIL, PASS, SKIPPED, STEP_TITLES
from webui.i18n import DEFAULT_LANGUAGE, catalogues, text
from webui.views import words

STATUS_ICONS = {PASS: "✓", FAIL: "✗", SKIPPED: "–", "pending": "…"}  # readiness status -> icon
READINESS_STEPS = tuple(STEP_TITLES)  # core.model.readiness step names, in order (titles are translated here)
_BACKTICKS = re.compile(r"`([^`]+)`")


def _esc(value) -> str:
    return html.escape(str(value))


def _esc_code(value) -> str:
    """Escaped text with `backticked` commands shown as code."""
    return _BACKTICKS.sub(r"<code>\1</code>", _esc(value))


def clock(seconds: float) -> str:
    """A moment of a clip as m:ss.s (the player writes m:ss.ss)."""
    minutes, rest = divmod(max(0.0, float(seconds)), 60.0)
    return f"{int(minutes)}:{rest:04.1f}"


# --------------------------------------------------------------------------- status bar


def status_html(report: dict | None, info: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    """The readiness panel, folded to one line ("Ready · NVIDIA H200 · float32 · 651 MiB") that
    opens to the three steps and what is loaded where; a failure opens it. The random-weights
    warning stays outside the fold: it must be seen."""
    steps = report["steps"] if report else []
    kind, words_ = _verdict(report, info, lang)
    parts = [
        f'<details class="cw-status cw-{kind}" id="cw-status"{"" if kind != "bad" else " open"}>',
        f'<summary><span class="cw-dot" aria-hidden="true"></span><span class="cw-verdict">{_esc(words_)}</span>'
        f"{_summary_tail(info, lang)}</summary>",
        '<div class="cw-steps">',
    ]
    for step in steps or _pending_steps(lang):
        if info.get("error") and step["detail"] == info["error"]:
            step = {**step, "detail": text("status.see_below", lang), "status": step["status"], "data": {}}
        parts.append(_step_html(step, lang))
    parts.append("</div>")
    parts.append(f'<div class="cw-meta">{_meta_line(info, lang)}</div>')
    parts.append(f'<p class="cw-hint">{_esc(text("status.rerun_hint", lang))}</p>')
    if info.get("state") == "failed" and info.get("error"):
        parts.append(
            '<div class="cw-fix">' + text("status.not_loaded_html", lang, error=_esc_code(info["error"])) + "</div>"
        )
    parts.append("</details>")
    if info.get("random_weights"):
        parts.append(f'<div class="cw-fix" id="cw-random" role="note">{text("status.random_weights_html", lang)}</div>')
    return "".join(parts)


def _summary_tail(info: dict, lang: str) -> str:
    """ " · device · dtype · resident MiB" for the folded line (what is known)."""
    device = text("status.device_cpu_short", lang) if info.get("device") == "cpu" else info.get("device_label")
    resident = info.get("resident_mib")
    items = [device or info.get("device"), info.get("dtype"), f"{resident:.0f} MiB" if resident else None]
    tail = "".join(f" · {_esc(item)}" for item in items if item)
    return f'<span class="cw-status-tail">{tail}</span>' if tail else ""


def _verdict(report: dict | None, info: dict, lang: str) -> tuple[str, str]:
    if info.get("state") == "loading":
        return "wait", text("status.loading", lang)
    if report is None:
        return "wait", text("status.not_checked", lang)
    if report["ok"]:
        return "ok", text("status.ready", lang)
    return "bad", text("status.not_ready", lang)


def _pending_steps(lang: str) -> list[dict]:
    return [
        {"name": n, "title": n, "status": "pending", "detail": text("status.step_pending", lang), "seconds": 0.0}
        for n in READINESS_STEPS
    ]


def _translated(prefix: str, name: str, fallback: str, lang: str) -> str:
    """``prefix + name`` from the catalogue, or ``fallback`` (core's English) for a name we do not know."""
    key = prefix + name
    return text(key, lang) if key in catalogues()[DEFAULT_LANGUAGE] else fallback


def _step_html(step: dict, lang: str) -> str:
    status = step["status"]
    title = _translated("status.step.", step["name"], step["title"], lang)
    word = _translated("status.word.", status, status, lang)
    return (
        f'<div class="cw-step cw-step-{_esc(status)}" data-step="{_esc(step["name"])}">'
        f'<span class="cw-icon">{STATUS_ICONS.get(status, "?")}</span> '
        f'<b>{_esc(title)}</b> <span class="cw-word">{_esc(word)}</span>'
        f'<div class="cw-detail">{_esc(words.step_detail(step, lang))}</div></div>'
    )


def device_label(info: dict, lang: str) -> str:
    """The engine's device in ``lang`` ("CPU（未使用 GPU）"); a GPU by its name."""
    return _device_label(info, lang)


def _device_label(info: dict, lang: str) -> str:
    if info.get("device") == "cpu":
        return text("status.device_cpu", lang)
    return str(info.get("device_label") or info.get("device"))


def _meta_line(info: dict, lang: str) -> str:
    resident = info.get("resident_mib")
    items = [
        (text("status.model", lang), info.get("model_path") or info.get("model")),
        (text("status.device", lang), _device_label(info, lang)),
        (text("status.dtype", lang), info.get("dtype")),
        (text("status.resident", lang), f"{resident:.1f} MiB" if resident is not None else text("status.none", lang)),
    ]
    if info.get("load_seconds") is not None:
        items.append((text("status.loaded_in", lang), f"{info['load_seconds']:.1f} s"))
    return " · ".join(f"<span><b>{_esc(k)}:</b> {_esc(v)}</span>" for k, v in items)


# --------------------------------------------------------------------------- audio and tokens


def facts_markdown(facts: dict, lang: str = DEFAULT_LANGUAGE, captured: bool = False) -> str:
    """What we read: format, rate, channels, length, level; then any warnings (core's, English).
    ``captured``: a Live recording, whose rate and channels are the browser's choice (words.captured)."""
    peak = facts["peak"]
    peak_db = f"{20 * math.log10(peak):.1f} dBFS" if peak > 0 else text("facts.silent", lang)
    rows = [
        (text("facts.file", lang), f"`{facts['name']}`"),
        (text("facts.format", lang), facts["format"]),
        (text("facts.sample_rate", lang), f"{facts['sample_rate']} Hz"),
        (text("facts.channels", lang), facts["channels"]),
        (text("facts.duration", lang), f"{facts['duration_s']:.2f} s"),
        (text("facts.peak_rms", lang), f"{peak_db} / {facts['rms_dbfs']:.1f} dBFS"),
        (text("facts.clipped", lang), facts["clipped_samples"]),
    ]
    out = _table((text("facts.title", lang), ""), rows)
    warnings = list(facts.get("warnings") or [])
    if warnings:
        say = words.captured if captured else words.sentence
        out += "\n\n" + "\n".join(f"- ⚠ {say(w, lang)}" for w in warnings)
    else:
        out += "\n\n" + text("facts.no_warnings", lang)
    return out


def tokens_markdown(summary: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    """Frames, codebooks, rates and compression of a token file's summary()."""
    rate = text(
        "tokens.bitrate_value",
        lang,
        kbps=f"{summary['bitrate_bps'] / 1000:.2f}",
        nominal=f"{summary['nominal_bitrate_bps'] / 1000:.1f}",
    )
    rows = [
        (text("tokens.frames_codebooks", lang), f"{summary['frames']} × {summary['codebooks']}"),
        (text("tokens.frame_rate", lang), text("tokens.frame_rate_value", lang, rate=f"{summary['frame_rate']:g}")),
        (text("tokens.per_second", lang), f"{summary['tokens_per_second']:g}"),
        (text("tokens.bitrate", lang), rate),
        (text("facts.duration", lang), f"{summary['duration_s']:.2f} s"),
    ]
    if "compression_vs_original" in summary:
        rows.append((text("tokens.compression_input", lang), f"{summary['compression_vs_original']:.0f} : 1"))
    rows.append((text("tokens.compression_pcm24k", lang), f"{summary['compression_vs_pcm24k']:.0f} : 1"))
    return _table((text("tokens.title", lang), ""), rows)


def token_file_markdown(meta: dict, summary: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    """Decode tab: where the token file came from, plus its summary."""
    versions = ", ".join(f"{k} {v}" for k, v in (meta.get("versions") or {}).items() if v)
    unknown = text("tokens.unknown", lang)
    rows = [
        (text("tokens.made_by", lang), f"`{meta['model_source']}`"),
        (text("tokens.created", lang), meta.get("created") or unknown),
        (text("tokens.versions", lang), versions or unknown),
    ]
    made, here = meta.get("decoder_rate_hz"), meta.get("output_rate_hz")  # the decoders' rates (docs/family.md)
    rows.append((text("tokens.decoder_rate", lang), f"{made / 1000:g} kHz" if made else unknown))
    if here:
        rows.append((text("tokens.decoded_at", lang), f"{here / 1000:g} kHz"))
    out = _table((text("tokens.file_title", lang), ""), rows)
    if made and here and made != here:
        out += "\n\n" + text("tokens.other_decoder", lang, made=f"{made / 1000:g} kHz", here=f"{here / 1000:g} kHz")
    return out + "\n\n" + tokens_markdown(summary, lang)


def metric_name(name: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """A metric's name on the page: a name of words is translated, an acronym (PESQ-WB, STOI) is a name."""
    return _translated("metrics.name.", name, name, lang)


def metrics_markdown(metrics: list[dict], seconds: float | None = None, lang: str = DEFAULT_LANGUAGE) -> str:
    """One row per metric: value, which way is better, what it means (and any note, core's English)."""
    rows = []
    for m in metrics:
        value = "–" if m["value"] is None else f"{m['value']:.3f}{(' ' + m['unit']) if m['unit'] else ''}"
        arrow = text("metrics.higher" if m["better"] == "higher" else "metrics.lower", lang)
        meaning = _translated("metrics.meaning.", m["name"], m["meaning"], lang)
        meaning += f" *({words.sentence(m['note'], lang)})*" if m.get("note") else ""
        rate = m.get("rate_hz")  # the rate the row measures at (core.analysis.catalog: 16 kHz PESQ, 48 kHz SI-SDR)
        at = f"{rate / 1000:g} kHz" if isinstance(rate, int | float) else "–"
        rows.append((f"**{metric_name(m['name'], lang)}**", value, arrow, at, meaning))
    headers = (
        text("metrics.metric", lang),
        text("metrics.value", lang),
        "",
        text("metrics.measured_at", lang),
        text("metrics.meaning", lang),
    )
    out = "### " + text("metrics.title", lang) + "\n" + _table(headers, rows)
    if seconds is not None:
        out += "\n\n" + text("metrics.computed_in", lang, seconds=f"{seconds:.2f}")
    return out


def timing_markdown(timing: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    out = text(
        "timing.line",
        lang,
        model=f"{timing['model_s']:.2f}",
        encode=f"{timing['encode_s']:.2f}",
        decode=f"{timing['decode_s']:.2f}",
        ui=f"{timing['ui_s']:.2f}",
    )
    if timing.get("peak_gpu_mib") is not None:
        out += text("timing.peak_gpu", lang, mib=f"{timing['peak_gpu_mib']:.0f}")
    if timing.get("estimate"):
        out += text("timing.estimate", lang, estimate=words.estimate(timing["estimate"], lang))
    for warning in timing.get("warnings") or ():  # e.g. bf16 chunks redone in fp32
        out += text("timing.warning", lang, warning=_esc(words.sentence(warning, lang)))
    return out


# --------------------------------------------------------------------------- system


def stats_markdown(stats: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    rows = []
    gpu = stats.get("gpu")
    if gpu:
        rows += [
            (text("stats.gpu", lang), stats.get("gpu_name", stats.get("device", "GPU"))),
            (text("stats.gpu_allocated", lang), f"{gpu['allocated_mib']:.0f} MiB"),
            (text("stats.gpu_reserved", lang), f"{gpu['reserved_mib']:.0f} MiB"),
            (
                text("stats.gpu_free", lang),
                text("stats.of_mib", lang, used=f"{gpu['free_mib']:.0f}", total=f"{gpu['total_mib']:.0f}"),
            ),
        ]
    else:
        rows.append((text("stats.gpu", lang), text("stats.no_gpu", lang)))
    ram = text(
        "stats.of_mib", lang, used=f"{stats['system_ram_used_mib']:.0f}", total=f"{stats['system_ram_total_mib']:.0f}"
    )
    rows += [
        (text("stats.rss", lang), f"{stats['process_rss_mib']:.0f} MiB"),
        (text("stats.ram", lang), f"{ram} ({stats['system_ram_percent']:.0f}%)"),
        (
            text("stats.cpu", lang),
            text("stats.cpu_value", lang, percent=f"{stats['cpu_percent']:.0f}", cores=stats.get("cpu_count", "?")),
        ),
    ]
    return _table((text("stats.title", lang), ""), rows)


def vram_markdown(result: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    """Clear VRAM: each figure before → after."""
    before, after = result["before"], result["after"]
    if before.get("device", "cpu") == "cpu":
        return text("vram.no_gpu", lang)
    rows = [
        (text(f"vram.{key}", lang), f"{before[key]:.0f} MiB", f"{after[key]:.0f} MiB")
        for key in ("allocated_mib", "reserved_mib", "free_mib")
    ]
    return (
        "### "
        + text("vram.title", lang)
        + "\n"
        + _table(("", text("vram.before", lang), text("vram.after", lang)), rows)
    )


# --------------------------------------------------------------------------- helpers


def _table(headers: tuple, rows: list[tuple]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")
