"""A shareable report of one round trip: a zip with every file and a self-contained HTML page.

The zip holds the original, the reconstruction, the token file, the spectrogram PNGs,
``metrics.json`` (metrics, verdict, environment) and ``report.html``. The HTML embeds audio and
pictures as ``data:`` URLs and has no script, style sheet or font from elsewhere, so it opens
offline in any browser, mailed or copied alone.
"""

from __future__ import annotations

import base64
import html
import io
import json
import mimetypes
import platform
import zipfile
from collections.abc import Callable
from pathlib import Path

from core import tokens
from core.codec import SAMPLE_RATE

STYLE = """
body {font-family: system-ui, sans-serif; max-width: 1050px; margin: 24px auto; padding: 0 16px; color: #222;}
h1 {font-size: 1.5em;} h2 {font-size: 1.15em; margin-top: 28px;}
table {border-collapse: collapse;} td, th {border: 1px solid #ccc; padding: 4px 8px; text-align: left;}
.verdict {font-size: 1.25em; font-weight: 700; padding: 10px 14px; border-radius: 8px; background: #f3f3f3;}
.green {border-left: 8px solid #2e9d4f;} .amber {border-left: 8px solid #d9a400;}
.red {border-left: 8px solid #d2372c;} .unknown {border-left: 8px solid #888;}
.caveat {margin-top: 8px; padding: 8px; background: #fdecea; color: #611a15; border-radius: 6px;}
.players {display: flex; gap: 24px; flex-wrap: wrap;} figure {margin: 0;} img {max-width: 100%;}
.small {font-size: 0.85em; color: #555;}
.card {border: 1px solid #d0d4da; border-left: 8px solid #888; border-radius: 10px; padding: 10px 14px; background: #f3f4f6;}
.card.green {border-left-color: #1a7f37; background: #e9f7ee;} .card.amber {border-left-color: #8a5a00; background: #fff5db;}
.card.red {border-left-color: #b42318; background: #fdecea;}
.card-head {display: flex; align-items: center; gap: 10px;} .card-head h2 {margin: 0; font-size: 1.3em;}
.dot {width: 1.1em; height: 1.1em; border-radius: 50%; flex: none; background: #888;}
.green .dot {background: #1a7f37;} .amber .dot {background: #8a5a00;} .red .dot {background: #b42318;}
.lead {margin: 4px 0 0 0; font-weight: 600;} .card ul {margin: 6px 0 4px 0; padding-left: 1.3em;}
.placing {margin: 6px 0 0 0;}
footer {margin-top: 28px; border-top: 1px solid #ddd; padding-top: 8px;}
"""
SOURCES_MARK = "<!-- cw:sources -->"  # where a renderer wants the other sources and the table (else before the footer)
BITRATE_ROW = "Bitrate"  # core.judging.source_table.BITRATE: bit/s in the data, kbit/s on the page


def data_url(path: str | Path) -> str:
    """The file as a ``data:`` URL (its MIME type from the name)."""
    path = Path(path)
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if path.suffix.lower() == ".wav":
        mime = "audio/wav"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def pcm16_wav_data_url(path: str | Path) -> str:
    """A WAV as a ``data:`` URL in 16-bit PCM, which every browser plays (our WAVs are 32-bit
    float, which some do not), at half the size."""
    import numpy as np
    import soundfile as sf

    samples, rate = sf.read(path, dtype="float32")
    buffer = io.BytesIO()  # the zip keeps the exact float WAVs; this copy is for listening, so peaks clip at full scale
    sf.write(buffer, np.clip(samples, -1.0, 1.0), rate, format="WAV", subtype="PCM_16")
    return f"data:audio/wav;base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def audio_tag(path: str | Path, caption: str, element_id: str = "") -> str:
    ident = f' id="{html.escape(element_id)}"' if element_id else ""
    return (
        f"<figure><figcaption>{html.escape(caption)}</figcaption>"
        f'<audio controls preload="auto"{ident} src="{pcm16_wav_data_url(path)}"></audio></figure>'
    )


def image_tag(path: str | Path, alt: str) -> str:
    return f'<figure><img alt="{html.escape(alt)}" src="{data_url(path)}"></figure>'


def footer(words: str) -> str:
    """The page's last element: nothing comes after it."""
    return f'<footer class="small">{html.escape(words)}</footer>'


def page(title: str, body: str, lang: str = "en") -> str:
    """A whole HTML document with the report style; ``body`` is trusted HTML."""
    return (
        f'<!doctype html>\n<html lang="{html.escape(lang)}"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style></head>'
        f"<body>\n{body}\n</body></html>\n"
    )


def table(rows: list[list], header: list[str]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def verdict_block(verdict: dict | None, placing: str = "") -> str:
    """The verdict as the page's card shows it: the coloured box, its dot and title, the reasons,
    where the codec stands among the other sources (``placing``), the random-weights caveat."""
    if not verdict:
        return '<div class="card unknown"><div class="card-head"><h2>No verdict was computed.</h2></div></div>'
    level = str(verdict.get("level")) if verdict.get("level") in ("green", "amber", "red") else "unknown"
    reasons = "".join(f"<li>{html.escape(r)}</li>" for r in verdict.get("reasons", []))
    return card(level, verdict["words"].capitalize(), "", reasons, placing, verdict.get("caveat") or "")


def card(level: str, title: str, lead: str, reasons_html: str, placing: str, caveat: str) -> str:
    """The card's HTML (``reasons_html``: trusted ``<li>`` items; the other texts are escaped)."""
    lead_html = f'<p class="lead">{html.escape(lead)}</p>' if lead else ""
    placing_html = f'<p class="placing">{html.escape(placing)}</p>' if placing else ""
    caveat_html = f'<div class="caveat">{html.escape(caveat)}</div>' if caveat else ""
    return (
        f'<div class="card {html.escape(level)}"><div class="card-head"><span class="dot"></span>'
        f"<h2>{html.escape(title)}</h2></div>{lead_html}<ul>{reasons_html}</ul>{placing_html}{caveat_html}</div>"
    )


ENV_WORDS = {  # the environment's rows and words on the English page (the web page passes its reader's)
    "model": "model",
    "random_weights": "random weights",
    "device": "device",
    "dtype": "dtype",
    "versions": "versions",
    "timings_s": "timings",
    "yes": "yes",
    "no": "no",
}


def environment_rows(env: dict, words: dict | None = None) -> list[list]:
    """The environment as rows a person reads: "yes"/"no", versions as "torch 2.11.0 · …", timings as
    "encode 0.06 s · decode 0.09 s · …" (``words``: ENV_WORDS's keys, and ``timing.<key>`` names)."""
    words = ENV_WORDS | (words or {})
    rows = []
    for key, value in env.items():
        if isinstance(value, bool):
            shown = words["yes"] if value else words["no"]
        elif key == "versions" and isinstance(value, dict):
            shown = " · ".join(f"{name} {version}" for name, version in value.items() if version)
        elif key == "timings_s" and isinstance(value, dict):
            shown = " · ".join(
                f"{words.get('timing.' + name, name.removesuffix('_s'))} {seconds:.2f} s"
                for name, seconds in value.items()
                if name.endswith("_s") and isinstance(seconds, int | float) and not isinstance(seconds, bool)
            )
        else:
            shown = value
        rows.append([words.get(key, key), shown])
    return rows


def environment(engine_info: dict, timings: dict) -> dict:
    """What made these files: model, package versions, device, dtype, timings."""
    return {
        "model": engine_info.get("model"),
        "random_weights": engine_info.get("random_weights"),
        "device": engine_info.get("device"),
        "dtype": engine_info.get("dtype"),
        "output_rate_hz": engine_info.get("output_rate_hz"),  # the decoder's (docs/family.md)
        "versions": tokens.package_versions()
        | {"python": platform.python_version(), "distillmos": _version("distillmos")},
        "timings_s": timings,
    }


def _version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def roundtrip_html(
    title: str,
    original_wav: Path,
    reconstruction_wav: Path,
    pngs: dict[str, Path],
    metrics: list[dict],
    verdict: dict | None,
    env: dict,
) -> str:
    """The one-clip report page."""
    metric_rows = [[m["name"], m["value"], m.get("unit", ""), m.get("better", ""), m.get("note", "")] for m in metrics]
    mos = [
        ["DistillMOS, original", (verdict or {}).get("mos_original")],
        ["DistillMOS, reconstruction", (verdict or {}).get("mos_reconstruction")],
    ]
    body = [
        f"<h1>{html.escape(title)}</h1>",
        verdict_block(verdict),
        "<h2>Listen</h2><div class='players'>",
        audio_tag(original_wav, "Original (24 kHz mono, as the codec heard it)", "original"),
        audio_tag(reconstruction_wav, "Reconstruction (decoded from the codes)", "reconstruction"),
        "</div><h2>Metrics</h2>",
        table(
            metric_rows + [[name, value, "", "higher", "1..5, predicted"] for name, value in mos],
            ["metric", "value", "unit", "better", "note"],
        ),
        SOURCES_MARK,
        "<h2>Pictures</h2>",
        *(image_tag(path, caption) for caption, path in pngs.items()),
        "<h2>Environment</h2>",
        table(environment_rows(env), ["what", "value"]),
        footer("Made by Codec Workbench. This page needs no network: audio and pictures are inside it."),
    ]
    return page(title, "\n".join(body))


SOURCE_WORDS = {  # the comparison's words on the English page (the web page passes its reader's)
    "other": "Other sources",
    "table": "Every source side by side",
    "metric": "metric",
    "note": "PESQ-WB, STOI, SI-SDR and log-mel distance against the original; DistillMOS of each source alone; "
    "bitrate in bit/s from the codes or the encoded bytes. Measured on this clip.",
}


def sources_block(sources: list[dict] | None, comparison: dict | None, words: dict | None = None) -> str:
    """The other sources (anchors, the second checkpoint) as players, the one table with a column per
    source and where the codec stands (``comparison``: /compare_table's details, or a
    SourceTable.to_dict() with an optional ``placing``); "" when there is neither."""
    words = SOURCE_WORDS | (words or {})
    body = []
    if sources:
        players = "".join(audio_tag(s["path"], _source_caption(s), f"source-{s['id']}") for s in sources)
        body.append(f"<h2>{html.escape(words['other'])}</h2><div class='players'>{players}</div>")
    if comparison:
        measured = comparison.get("table", comparison)
        columns, rows = measured["columns"], measured["rows"]
        names, labels = words.get("rows") or {}, words.get("labels") or {}  # the reader's words, when given
        header = [words["metric"], *(labels.get(c["source"]["id"]) or _source_caption(c["source"]) for c in columns)]
        body.append(f"<h2>{html.escape(words['table'])}</h2>")
        body.append(table([[names.get(row, _row_name(row)), *_row_values(row, columns)] for row in rows], header))
        sentence = words.get("placing") or (comparison.get("placing") or {}).get("sentence")
        if sentence:
            body.append(f"<p>{html.escape(sentence)}</p>")
        body.append(f"<p class='small'>{html.escape(words['note'])}</p>")
    return "\n".join(body)


def _row_name(row: str) -> str:
    return "Bitrate (kbit/s)" if row == BITRATE_ROW else row


def _row_values(row: str, columns: list[dict]) -> list:
    """One row's values; the bitrate (bit/s in the data) in kbit/s, as its label says."""
    values = [c["values"].get(row) for c in columns]
    if row == BITRATE_ROW:
        return [None if v is None else round(v / 1000, 1) for v in values]
    return values


def _source_caption(source: dict) -> str:
    rate = source.get("bitrate_bps")
    label = str(source.get("label") or source["id"])
    return label if not rate or "bit/s" in label else f"{label} ({rate / 1000:.1f} kbit/s)"


def place_sources(text: str, block: str) -> str:
    """The sources' block where the page marked it, else before its footer (never after it)."""
    if SOURCES_MARK in text:
        return text.replace(SOURCES_MARK, block, 1)
    if block:
        at = text.rfind("<footer")
        at = at if at >= 0 else text.rfind("</body>")
        return text[:at] + block + "\n" + text[at:]
    return text


PICTURE_CAPTIONS = {  # picture id -> caption of the English page (another renderer words them itself)
    "spectrograms": "Log-mel spectrograms: original, reconstruction, difference",
    "token_usage": "Token usage: entropy per codebook, histogram of codebook 1",
}


def english_page(
    stem: str,
    original_wav: Path,
    reconstruction_wav: Path,
    pngs: dict[str, Path],
    metrics: list[dict],
    verdict: dict | None,
    env: dict,
) -> str:
    """The report page in English (the CLI's, and the default): ``pngs`` by picture id."""
    captioned = {PICTURE_CAPTIONS.get(key, key): path for key, path in pngs.items()}
    title = f"Codec Workbench report: {stem}"
    return roundtrip_html(title, original_wav, reconstruction_wav, captioned, metrics, verdict, env)


def write_roundtrip_report(
    folder: Path,
    stem: str,
    original_wav: Path,
    reconstruction_wav: Path,
    token_file: Path,
    pngs: dict[str, Path],
    metrics: list[dict],
    verdict: dict | None,
    env: dict,
    render: Callable[..., str] = english_page,
    sources: list[dict] | None = None,
    comparison: dict | None = None,
    source_words: dict | None = None,
) -> tuple[Path, Path]:
    """Write ``{stem}_report.html`` and ``{stem}_report.zip`` (both new files) into ``folder``.
    ``render(stem, original_wav, reconstruction_wav, pngs, metrics, verdict, env)`` makes the page
    (the web page passes one in the reader's language); ``metrics.json`` keeps the data as it is.
    ``sources`` (source dicts with paths) and ``comparison`` (the table of every source) go at the end
    of the page (:func:`sources_block`, in ``source_words``), the sources' WAVs into the zip."""
    folder = Path(folder)
    html_path = folder / f"{stem}_report.html"
    text = render(stem, original_wav, reconstruction_wav, pngs, metrics, verdict, env)
    text = place_sources(text, sources_block(sources, comparison, source_words))
    with open(html_path, "x", encoding="utf-8") as f:
        f.write(text)
    zip_path = folder / f"{stem}_report.zip"
    facts = [
        {k: v for k, v in s.items() if k not in ("path", "wav")} | {"file": Path(s["path"]).name} for s in sources or []
    ]
    data = {"metrics": metrics, "verdict": verdict, "environment": env, "sources": facts, "comparison": comparison}
    summary = json.dumps(data, indent=2, default=str)
    with open(zip_path, "xb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
        for path in (original_wav, reconstruction_wav, token_file, *pngs.values(), *(s["path"] for s in sources or [])):
            z.write(path, Path(path).name)
        z.writestr("metrics.json", summary)
        z.write(html_path, "report.html")
    return zip_path, html_path


def build_roundtrip_report(
    folder: Path,
    stem: str,
    original_wav: Path,
    reconstruction_wav: Path,
    token_file: Path,
    metrics: list[dict],
    verdict: dict | None,
    engine_info: dict,
    timings: dict,
    limits,
    render: Callable[..., str] = english_page,
    sources: list[dict] | None = None,
    comparison: dict | None = None,
    source_words: dict | None = None,
    figure_words: dict | None = None,
    samples: tuple | None = None,
    rate_hz: int = SAMPLE_RATE,
) -> tuple[Path, Path]:
    """Draw the pictures from the files (read at ``rate_hz`` within ``limits``; or ``samples``, both WAVs' at
    ``rate_hz``, when the caller holds them), then write the zip and the HTML (``render`` makes the page)."""
    from core.analysis import metrics as analysis_metrics
    from core.analysis import token_usage
    from core.audio.rates import read_at

    folder = Path(folder)
    original, reconstruction = samples or [read_at(p, limits, rate_hz) for p in (original_wav, reconstruction_wav)]
    codes = tokens.load_tokens(token_file, max_duration_s=limits.max_duration_s).codes
    words = figure_words or {}  # the figures' words in the reader's language (English: core's own)
    pngs = {
        "spectrograms": analysis_metrics.figure_to_png(
            analysis_metrics.spectrogram_figure(original, reconstruction, rate_hz, words=words.get("spectrogram")),
            folder / f"{stem}_spectrograms.png",
        ),
        "token_usage": analysis_metrics.figure_to_png(
            token_usage.usage_figure(codes, words=words.get("usage")), folder / f"{stem}_token_usage.png"
        ),
    }
    return write_roundtrip_report(
        folder,
        stem,
        original_wav,
        reconstruction_wav,
        token_file,
        pngs,
        metrics,
        verdict,
        environment(engine_info, timings),
        render,
        sources,
        comparison,
        source_words,
    )
