"""Turn engine results into what the page shows: HTML for the status bar, Markdown for
facts, token summaries, metrics and system stats. Pure functions of plain data."""

from __future__ import annotations

import html
import math
import re

STATUS_ICONS = {"pass": "✓", "fail": "✗", "skipped": "–"}  # readiness status -> icon
PCM_BITS = 16  # bits per sample of the PCM we compare the codes with
_BACKTICKS = re.compile(r"`([^`]+)`")


def _esc(value) -> str:
    return html.escape(str(value))


def _esc_code(value) -> str:
    """Escaped text with `backticked` commands shown as code."""
    return _BACKTICKS.sub(r"<code>\1</code>", _esc(value))


# --------------------------------------------------------------------------- status bar


def status_html(report: dict | None, info: dict) -> str:
    """The status bar: three readiness steps, then what is loaded where."""
    steps = report["steps"] if report else []
    verdict = _verdict(report, info)
    parts = [f'<div class="cw-status cw-{verdict[0]}" id="cw-status">',
             f'<div class="cw-verdict">{_esc(verdict[1])}</div>',
             '<div class="cw-steps">']
    for step in steps or _pending_steps():
        if info.get("error") and step["detail"] == info["error"]:
            step = {**step, "detail": "the model is not loaded: see below"}  # said once, in the box
        parts.append(_step_html(step))
    parts.append("</div>")
    parts.append(f'<div class="cw-meta">{_meta_line(info)}</div>')
    if info.get("random_weights"):
        parts.append('<div class="cw-fix" id="cw-random">This checkpoint has <b>random weights</b> (built for '
                     "tests): the reconstruction is not speech and the scores say nothing about the codec. "
                     "Load the published weights to judge quality.</div>")
    if info.get("state") == "failed" and info.get("error"):
        parts.append(f'<div class="cw-fix"><b>The model is not loaded.</b> {_esc_code(info["error"])} '
                     "Then press <b>Re-run checks</b> (or restart the server).</div>")
    parts.append("</div>")
    return "".join(parts)


def _verdict(report: dict | None, info: dict) -> tuple[str, str]:
    if info.get("state") == "loading":
        return "wait", "Loading the model…"
    if report is None:
        return "wait", "Readiness not checked yet"
    if report["ok"]:
        return "ok", "Ready"
    return "bad", "Not ready"


def _pending_steps() -> list[dict]:
    titles = (("cuda", "CUDA present"), ("weights", "Weights resident"), ("roundtrip", "Test round trip"))
    return [{"name": n, "title": t, "status": "skipped", "detail": "not checked yet", "seconds": 0.0}
            for n, t in titles]


def _step_html(step: dict) -> str:
    status = step["status"]
    return (f'<div class="cw-step cw-step-{_esc(status)}" data-step="{_esc(step["name"])}">'
            f'<span class="cw-icon">{STATUS_ICONS.get(status, "?")}</span> '
            f'<b>{_esc(step["title"])}</b> <span class="cw-word">{_esc(status)}</span>'
            f'<div class="cw-detail">{_esc(step["detail"])}</div></div>')


def _meta_line(info: dict) -> str:
    resident = info.get("resident_mib")
    items = [
        ("Model", info.get("model_path") or info.get("model")),
        ("Device", info.get("device_label") or info.get("device")),
        ("dtype", info.get("dtype")),
        ("Resident weights", f"{resident:.1f} MiB" if resident is not None else "none"),
    ]
    if info.get("load_seconds") is not None:
        items.append(("Loaded in", f"{info['load_seconds']:.1f} s"))
    return " · ".join(f"<span><b>{_esc(k)}:</b> {_esc(v)}</span>" for k, v in items)


# --------------------------------------------------------------------------- audio and tokens


def facts_markdown(facts: dict) -> str:
    """What we read: format, rate, channels, length, level; then any warnings."""
    peak = facts["peak"]
    peak_db = f"{20 * math.log10(peak):.1f} dBFS" if peak > 0 else "silent"
    rows = [
        ("File", f"`{facts['name']}`"),
        ("Format", facts["format"]),
        ("Sample rate", f"{facts['sample_rate']} Hz"),
        ("Channels", facts["channels"]),
        ("Duration", f"{facts['duration_s']:.2f} s"),
        ("Peak / RMS", f"{peak_db} / {facts['rms_dbfs']:.1f} dBFS"),
        ("Clipped samples", facts["clipped_samples"]),
    ]
    text = _table(("Input", ""), rows)
    warnings = list(facts.get("warnings") or [])
    if warnings:
        text += "\n\n" + "\n".join(f"- ⚠ {w}" for w in warnings)
    else:
        text += "\n\nNo warnings: the codec got the audio as it is."
    return text


def pcm_bitrate(facts: dict) -> float:
    """Bit/s of the input as 16-bit PCM at its own rate and channel count."""
    return float(facts["sample_rate"] * facts["channels"] * PCM_BITS)


def tokens_markdown(summary: dict) -> str:
    """Frames, codebooks, rates and compression of a token file's summary()."""
    rows = [
        ("Frames × codebooks", f"{summary['frames']} × {summary['codebooks']}"),
        ("Frame rate", f"{summary['frame_rate']:g} frames/s"),
        ("Tokens per second", f"{summary['tokens_per_second']:g}"),
        ("Bitrate", f"{summary['bitrate_bps'] / 1000:.2f} kbit/s (nominal {summary['nominal_bitrate_bps'] / 1000:.1f})"),
        ("Duration", f"{summary['duration_s']:.2f} s"),
    ]
    if "compression_vs_original" in summary:
        rows.append(("Compression vs 16-bit PCM of the input", f"{summary['compression_vs_original']:.0f} : 1"))
    rows.append(("Compression vs 16-bit PCM at 24 kHz mono", f"{summary['compression_vs_pcm24k']:.0f} : 1"))
    return _table(("Tokens", ""), rows)


def token_file_markdown(meta: dict, summary: dict) -> str:
    """Decode tab: where the token file came from, plus its summary."""
    versions = ", ".join(f"{k} {v}" for k, v in (meta.get("versions") or {}).items() if v)
    rows = [
        ("Made by model", f"`{meta['model_source']}`"),
        ("Created", meta.get("created") or "unknown"),
        ("Versions", versions or "unknown"),
    ]
    return _table(("Token file", ""), rows) + "\n\n" + tokens_markdown(summary)


def metrics_markdown(metrics: list[dict], seconds: float | None = None) -> str:
    """One row per metric: value, which way is better, what it means (and any note)."""
    rows = []
    for m in metrics:
        value = "n/a" if m["value"] is None else f"{m['value']:.3f}{(' ' + m['unit']) if m['unit'] else ''}"
        arrow = "↑ higher is better" if m["better"] == "higher" else "↓ lower is better"
        meaning = m["meaning"] + (f" *({m['note']})*" if m.get("note") else "")
        rows.append((f"**{m['name']}**", value, arrow, meaning))
    text = "### Objective metrics\n" + _table(("Metric", "Value", "", "Meaning"), rows)
    if seconds is not None:
        text += f"\n\nComputed in {seconds:.2f} s."
    return text


def timing_markdown(timing: dict) -> str:
    model = timing["model_s"]
    text = (f"Model time **{model:.2f} s** (encode {timing['encode_s']:.2f} s + decode "
            f"{timing['decode_s']:.2f} s) · workbench time {timing['ui_s']:.2f} s "
            f"(reading, resampling, plotting, writing files)")
    if timing.get("peak_gpu_mib") is not None:
        text += f" · peak GPU memory {timing['peak_gpu_mib']:.0f} MiB"
    if timing.get("estimate"):
        text += f" · before the job: {timing['estimate']}"
    text += ". The metrics follow below."
    for warning in timing.get("warnings") or ():  # from the engine, e.g. bf16 chunks redone in fp32
        text += f"\n\n⚠️ {_esc(warning)}"
    return text


# --------------------------------------------------------------------------- system


def stats_markdown(stats: dict) -> str:
    rows = []
    gpu = stats.get("gpu")
    if gpu:
        rows += [
            ("GPU", stats.get("gpu_name", stats.get("device", "GPU"))),
            ("GPU memory allocated", f"{gpu['allocated_mib']:.0f} MiB"),
            ("GPU memory reserved", f"{gpu['reserved_mib']:.0f} MiB"),
            ("GPU memory free", f"{gpu['free_mib']:.0f} of {gpu['total_mib']:.0f} MiB"),
        ]
    else:
        rows.append(("GPU", "none in use (the model runs on the CPU)"))
    rows += [
        ("Process RAM (RSS)", f"{stats['process_rss_mib']:.0f} MiB"),
        ("System RAM", f"{stats['system_ram_used_mib']:.0f} of {stats['system_ram_total_mib']:.0f} MiB "
                       f"({stats['system_ram_percent']:.0f}%)"),
        ("CPU", f"{stats['cpu_percent']:.0f}% of {stats.get('cpu_count', '?')} cores"),
    ]
    return _table(("System", ""), rows)


def vram_markdown(result: dict) -> str:
    """Clear VRAM: each figure before → after."""
    before, after = result["before"], result["after"]
    if before.get("device", "cpu") == "cpu":
        return "No GPU in use: there is no GPU memory to clear (Python garbage was collected)."
    rows = [(name, f"{before[key]:.0f} MiB", f"{after[key]:.0f} MiB")
            for name, key in (("Allocated", "allocated_mib"), ("Reserved", "reserved_mib"), ("Free", "free_mib"))]
    return "### Cleared VRAM\n" + _table(("", "Before", "After"), rows)


# --------------------------------------------------------------------------- helpers


def _table(headers: tuple, rows: list[tuple]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")
