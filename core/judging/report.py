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
"""


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


def verdict_block(verdict: dict | None) -> str:
    if not verdict:
        return '<p class="verdict unknown">No verdict was computed.</p>'
    caveat = f'<div class="caveat">{html.escape(verdict["caveat"])}</div>' if verdict.get("caveat") else ""
    reasons = "; ".join(verdict.get("reasons", []))
    return (
        f'<p class="verdict {html.escape(verdict["level"])}">{html.escape(verdict["words"].capitalize())}</p>'
        f'<p class="small">{html.escape(reasons)}</p>{caveat}'
    )


def environment(engine_info: dict, timings: dict) -> dict:
    """What made these files: model, package versions, device, dtype, timings."""
    return {
        "model": engine_info.get("model"),
        "random_weights": engine_info.get("random_weights"),
        "device": engine_info.get("device"),
        "dtype": engine_info.get("dtype"),
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
    env_rows = [[k, json.dumps(v) if isinstance(v, dict) else v] for k, v in env.items()]
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
        "<h2>Pictures</h2>",
        *(image_tag(path, caption) for caption, path in pngs.items()),
        "<h2>Environment</h2>",
        table(env_rows, ["what", "value"]),
        '<p class="small">Made by Codec Workbench. This page needs no network: audio and pictures are inside it.</p>',
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
        body.append(table([[names.get(row, row), *(c["values"].get(row) for c in columns)] for row in rows], header))
        sentence = words.get("placing") or (comparison.get("placing") or {}).get("sentence")
        if sentence:
            body.append(f"<p>{html.escape(sentence)}</p>")
        body.append(f"<p class='small'>{html.escape(words['note'])}</p>")
    return "\n".join(body)


def _source_caption(source: dict) -> str:
    rate = source.get("bitrate_bps")
    label = str(source.get("label") or source["id"])
    return label if not rate or "bit/s" in label else f"{label} ({rate / 1000:.1f} kbit/s)"


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
    block = sources_block(sources, comparison, source_words)
    if block:
        head, end, tail = text.rpartition("</body>")
        text = head + block + "\n" + end + tail
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
) -> tuple[Path, Path]:
    """Draw the pictures from the files (read within ``limits``, a core.settings.AudioLimits), then
    write the zip and the HTML (see write_roundtrip_report; ``render`` makes the page)."""
    from core.analysis import metrics as analysis
    from core.analysis import token_usage
    from core.audio.files import load_audio

    folder = Path(folder)
    original = load_audio(original_wav, limits).samples
    reconstruction = load_audio(reconstruction_wav, limits).samples
    codes = tokens.load_tokens(token_file, max_duration_s=limits.max_duration_s).codes
    pngs = {
        "spectrograms": analysis.figure_to_png(
            analysis.spectrogram_figure(original, reconstruction), folder / f"{stem}_spectrograms.png"
        ),
        "token_usage": analysis.figure_to_png(token_usage.usage_figure(codes), folder / f"{stem}_token_usage.png"),
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
