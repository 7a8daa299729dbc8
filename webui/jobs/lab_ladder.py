"""The lab's codebook ladder (the clip decoded with the first k codebooks, level by level) and token usage,
without Gradio. Levels come out at the decoder's rate and are compared with the original at the common
rate of the manifest (``core.audio.rates``): the encoder still hears the clip at 24 kHz."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from core import tokens
from core.analysis import catalog, timeline, token_usage
from core.analysis import metrics as analysis_metrics
from core.audio import rates
from core.audio.files import load_audio, on_grid, write_pcm16
from core.codec import SAMPLE_RATE, check_duration
from core.nn import ladder
from core.settings import AudioLimits
from webui.jobs.common import Progress, quiet, stem_of
from webui.jobs.lab import LADDER_KEYS, LadderOutput, add_copy, is_level, load_at, source_of, write_residual
from webui.jobs.lab_analysis import analyse as _analyse


def _codes_for(engine, audio: np.ndarray, token_path: Path | None):
    """The clip's codes: from its token file when there is one (it must be this clip's), else
    encoded now. Returns (codes, model seconds)."""
    if token_path is None:
        encoded = engine.encode_array(audio)
        return encoded.codes, encoded.seconds
    token_file = tokens.load_tokens(token_path, max_duration_s=engine.settings.max_duration_s)
    ladder.check_same_clip(token_path.name, token_file.original_samples, audio.size)
    return token_file.codes, 0.0


def run_ladder(
    engine,
    audio_path: Path,
    token_path: Path | None,
    levels,
    folder: Path,
    limits: AudioLimits,
    manifest: dict | None = None,
    progress: Progress = quiet,
) -> LadderOutput:
    """Decode the clip with the first k codebooks for each level: a WAV, a spectrogram, fast
    metrics and a loudness gain per level, added to ``manifest`` (or to one with the original only)."""
    start = time.perf_counter()
    levels = ladder.parse_levels(levels)
    progress(0.02, "job.reading")
    heard = load_audio(audio_path, limits).samples  # what the encoder hears: 24 kHz
    ladder.check_budget(levels, heard.size / SAMPLE_RATE, engine.settings.ladder_max_audio_s)
    codes, model_s = _codes_for(engine, heard, token_path)
    check_duration([codes.shape[0]], engine.settings.max_duration_s)
    rate = max(rates.rate_of_files([audio_path]), int((manifest or {}).get("sample_rate") or 0), engine.output_rate)
    original = load_at(audio_path, limits, rate)  # the levels are compared and played at this rate
    rungs = ladder.decode_ladder(
        engine,
        codes,
        heard.size,
        levels,
        progress=lambda f: progress(0.05 + 0.8 * f, "lab.job.ladder", percent=f"{f:.0%}"),
    )
    model_s += sum(r.seconds for r in rungs)
    progress(0.85, "lab.job.ladder_figures")
    stem = stem_of(audio_path).removesuffix("_24k_mono")
    ref = _analyse(original, rate)
    ref_mel, ref_lufs, top = ref.mel, ref.lufs, float(ref.mel.max())
    sources = [s for s in (manifest or {}).get("sources", []) if not is_level(s)]
    if not sources:
        first = source_of("original", "a", "original", audio_path, original, ref_lufs, 0.0, ref_lufs, "original")
        sources = [asdict(first)]
    residuals = {k: v for k, v in (manifest or {}).get("residuals", {}).items() if not k.startswith("k")}
    kept = {s["path"] for s in sources} | set(residuals.values())  # copies the page had, passed back as they were
    copies = {p: c for p, c in ((manifest or {}).get("listen") or {}).items() if p in kept}
    rows: list[dict] = []
    original_png = analysis_metrics.mel_png(
        ref_mel, folder / f"{stem}_original.png", top - analysis_metrics.TOP_DB, top
    )
    pictures = [(str(original_png), "original")]  # the page names it in the reader's language
    for rung in rungs:
        # as written, at the manifest's rate: what is measured is what the player plays
        samples = on_grid(rates.to_rate(rung.samples, engine.output_rate, rate, original.size))
        wav = write_pcm16(folder / f"{stem}_k{rung.codebooks:02d}.wav", samples, rate)
        add_copy(copies, wav, samples, rate)
        level = _analyse(samples, rate)
        mel = level.mel
        compared = analysis_metrics.quick_compare(original, samples, (ref_mel, mel), rate)
        metrics = {m.name: m.value for m in compared}
        png = analysis_metrics.mel_png(
            mel, folder / f"{stem}_k{rung.codebooks:02d}.png", top - analysis_metrics.TOP_DB, top
        )
        key = str(rung.codebooks) if str(rung.codebooks) in LADDER_KEYS else ""  # [3] is k = 3, not the third level
        label = f"k{rung.codebooks}"  # the page shows it in the reader's language
        source = source_of(
            f"k{rung.codebooks}",
            key,
            label,
            wav,
            samples,
            ref_lufs,
            lufs=level.lufs,
            kind="level",
            bitrate_bps=rung.bitrate_bps,
            rate_hz=rate,
        )
        sources.append(asdict(source))
        residuals[source.id] = str(write_residual(folder, stem, source.id, original, samples, copies, rate))
        rows.append(
            {
                "codebooks": rung.codebooks,
                "bitrate_bps": rung.bitrate_bps,
                "si_sdr_db": metrics[catalog.SI_SDR],
                "mel_distance_db": metrics[catalog.MEL_DISTANCE],
                "gain_db": source.gain_db,
                "decode_s": rung.seconds,
                "wav": str(wav),
                "spectrogram": str(png),
            }
        )
        pictures.append((str(png), f"k{rung.codebooks}"))  # a source id: the page words it
    total = time.perf_counter() - start
    manifest = dict(
        manifest
        or {
            "duration_s": original.size / rate,
            "envelope": timeline.waveform_envelope(original, sample_rate=rate),
            "reference_lufs": ref_lufs,
        }
    )
    manifest["sample_rate"] = rate
    manifest["sources"] = sources
    manifest["residuals"] = residuals
    manifest["listen"] = copies
    return LadderOutput(manifest, rows, pictures, {"model_s": model_s, "ui_s": total - model_s, "total_s": total})


def usage_of(
    token_path: Path, codebook, folder: Path, max_duration_s: float | None = None, words: dict | None = None
) -> tuple[list[dict], Path]:
    """Token usage of a token file (refused from its header when longer than ``max_duration_s``):
    per-codebook rows and the figure for ``codebook``."""
    codebook = token_usage.check_codebook(codebook)
    token_file = tokens.load_tokens(token_path, max_duration_s=max_duration_s)
    rows = [asdict(r) for r in token_usage.usage(token_file.codes)]
    stem = stem_of(token_path).removesuffix("_tokens")
    png = analysis_metrics.figure_to_png(
        token_usage.usage_figure(token_file.codes, codebook, words), folder / f"{stem}_usage_cb{codebook}.png"
    )
    return rows, png
