"""What each tab does, without Gradio: read the input, call the engine, write the
request's files, compute metrics and figures. The Gradio handlers wrap these; the UI
overhead benchmark times them.

Everything is written into the request's own folder, under names made from the input's
name, with files opened in exclusive mode: nothing the user gave is ever overwritten.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from core import anchors, tokens
from core.analysis import metrics as analysis_metrics
from core.analysis import token_usage
from core.analysis.judges import DEFAULT_JUDGES, Judges
from core.audio.files import load_audio, on_grid, write_wav
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.judging import sources
from core.model.engine import ROUNDTRIP_ENCODE_SHARE
from core.settings import AudioLimits
from webui.jobs import compare as compare_jobs
from webui.jobs.common import Progress, quiet, stem_of


@dataclass(frozen=True)
class RoundTripOutput:
    original_wav: Path  # the codec's input: 24 kHz mono float WAV of 16-bit PCM values (webui.jobs.pcm16_copies)
    reconstruction_wav: Path  # the decoder's output: the same
    token_file: Path  # .npz token file
    spectrogram_png: Path  # original / reconstruction / difference
    facts: dict  # AudioFacts.to_dict()
    summary: dict  # TokenFile.summary(original_pcm_bps)
    timing: dict  # encode_s, decode_s, model_s, total_s, ui_s
    # the sources beside the codec (webui.jobs.compare.page_sources): sources, problems, agreement, token_file
    compare: dict = field(default_factory=dict)
    # both WAVs' samples as written (the 16-bit grid): the result's record keeps them (webui.jobs.results)
    samples: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    # the rates (core.audio.rates): compared_at_hz, output_rate_hz, second_output_rate_hz, original_rate_hz, original_top_hz
    rates: dict = field(default_factory=dict)


@dataclass(frozen=True)
class MetricsOutput:
    metrics: list[dict]  # Metric fields
    seconds: float  # wall time, reading the two files included


@dataclass(frozen=True)
class EncodeOutput:
    token_file: Path
    heatmap_png: Path  # token usage figure (entropy per codebook, histogram of codebook 1)
    facts: dict
    summary: dict
    timing: dict


@dataclass(frozen=True)
class DecodeOutput:
    wav: Path
    spectrogram_png: Path
    meta: dict  # model_source, created, versions of the token file
    summary: dict
    timing: dict


def _timing(start: float, encoded=None, decoded=None) -> dict:
    """Wall time split into model time (measured by the engine) and ours; peak GPU memory."""
    total = time.perf_counter() - start
    encode_s = encoded.seconds if encoded else 0.0
    decode_s = decoded.seconds if decoded else 0.0
    peaks = [r.peak_mib for r in (encoded, decoded) if r is not None and r.peak_mib is not None]
    return {
        "encode_s": encode_s,
        "decode_s": decode_s,
        "model_s": encode_s + decode_s,
        "total_s": total,
        "ui_s": total - encode_s - decode_s,
        "peak_gpu_mib": max(peaks) if peaks else None,
        "warnings": list(decoded.warnings) if decoded else [],
    }  # e.g. bf16 chunks redone in fp32


def _with_extra(timing: dict, extra: dict) -> dict:
    """The round trip's timing with the sources beside the codec: the second model's time is model
    time, the anchors' is their own; neither counts as the page's overhead (ui_s)."""
    out = timing | extra
    out["model_s"] += extra["compare_s"]
    out["ui_s"] -= extra["compare_s"] + extra["anchors_s"]
    return out


def _preflight(engine, operation: str, samples: int, progress: Progress, at: float) -> dict:
    """The engine's memory estimate for the job, shown before it starts (the engine refuses
    jobs that cannot fit). Its figures, for the page to say in its language (webui.views.words)."""
    estimate = engine.estimate(operation, samples=samples)
    fields = {
        "seconds": f"{estimate.seconds:.1f}",
        "need": f"{estimate.peak_mib / 1024:.2f}",
        "available": f"{estimate.available_mib / 1024:.2f}",
        "where_key": "words.gpu" if str(engine.settings.device).startswith("cuda") else "words.ram",
        "fits_key": "words.fits" if estimate.fits else "words.does_not_fit",
    }
    progress(at, f"job.estimate.{operation}", **fields)
    return fields | {"operation": operation}


def _span(progress: Progress, low: float, high: float, key: str) -> Callable[[float], None]:
    """Map the engine's per-chunk progress (0..1) onto [low, high] of the page's progress bar."""
    return lambda fraction: progress(low + (high - low) * fraction, key, percent=f"{fraction:.0%}")


def _read_and_encode(
    engine, operation: str, source: Path, limits: AudioLimits, progress: Progress, low: float, high: float
):
    """Read the audio, show the memory estimate, encode with progress on [low, high]."""
    progress(0.05, "job.reading")
    audio = load_audio(source, limits)
    estimate = _preflight(engine, operation, audio.samples.size, progress, low - 0.05)
    progress(low, "job.encoding")
    encoded = engine.encode(audio, progress=_span(progress, low, high, "job.encoding_part"))
    return audio, estimate, encoded


def _token_file(engine, codes, original_samples: int) -> tokens.TokenFile:
    return tokens.make_token_file(codes, original_samples, engine.settings.model, decoder_rate_hz=engine.output_rate)


def _trip_steps(progress: Progress, low: float, high: float) -> Callable[[float], None]:
    """Map ``Engine.roundtrip``'s progress (0..1 over encode then decode) onto [low, high], saying
    which half runs."""
    share = ROUNDTRIP_ENCODE_SHARE

    def step(fraction: float) -> None:
        at = low + (high - low) * fraction
        if fraction <= share:
            progress(at, "job.encoding_part", percent=f"{fraction / share:.0%}")
        else:
            progress(at, "job.decoding_part", percent=f"{(fraction - share) / (1 - share):.0%}")

    return step


def _made_steps(progress: Progress) -> Callable[[float], None]:
    """``make_sources``' progress (the model work to 0.9, the anchors after) on the page's bar: the
    encode and decode on [0.2, 0.8], the anchors on [0.8, 0.9]."""
    trip = _trip_steps(progress, 0.2, 0.8)

    def step(fraction: float) -> None:
        if fraction <= 0.9:
            trip(fraction / 0.9)
        else:
            progress(0.8 + (fraction - 0.9), "compare.job.anchors")

    return step


def roundtrip(
    engine,
    source: Path,
    folder: Path,
    limits: AudioLimits,
    progress: Progress = quiet,
    compare_with=(),
    figure_words: dict | None = None,
) -> RoundTripOutput:
    """Read, then ``Engine.roundtrip``; write both WAVs, the token file and the spectrogram comparison,
    and the sources in ``compare_with`` (anchor ids, ``compare`` for the second checkpoint:
    webui.jobs.compare). The metrics are the follow-up :func:`measure` (PESQ alone would take half the budget)."""
    start = time.perf_counter()
    progress(0.05, "job.reading")
    chosen = list(compare_with or [])
    batch = engine.live.cpu.batch  # work outside the model's lock yields the CPU to live sessions
    audio = batch(load_audio, source, sources.audio_limits_for(engine, sources.COMPARE_ID in chosen, limits))
    estimate = _preflight(engine, "roundtrip", audio.samples.size, progress, 0.15)
    progress(0.2, "job.encoding")
    wanted = anchors.parse_anchors([c for c in chosen if c != sources.COMPARE_ID])
    made = sources.make_sources(engine, audio, wanted, sources.COMPARE_ID in chosen, _made_steps(progress))
    encoded, decoded = made.trip.encoded, made.trip.decoded
    stem = stem_of(source)
    progress(0.9, "job.writing")
    written = batch(
        sources.write_sources, (made.original, *made.sources), lambda s: folder / sources.file_name(stem, s.id)
    )
    extra = compare_jobs.page_sources(engine, made, chosen, written, folder, stem)
    token_file = _token_file(engine, encoded.codes, encoded.original_samples)
    token_path = tokens.save_tokens(token_file, folder / f"{stem}_tokens.npz")
    # as written, at the comparison rate: what is measured and played
    heard, out = on_grid(made.original.samples), on_grid(made.by_id(sources.CODEC_ID).samples)
    words = (figure_words or {}).get("spectrogram")
    png = batch(_spectrogram_png, heard, out, made.rate_hz, words, folder / f"{stem}_spectrogram.png")
    return RoundTripOutput(
        written[sources.ORIGINAL_ID],
        written[sources.CODEC_ID],
        token_path,
        png,
        audio.facts.to_dict(),
        token_file.summary(audio.facts.pcm_bps),
        _with_extra(_timing(start, encoded, decoded), extra.timing) | {"estimate": estimate},
        {
            "sources": extra.sources,
            "problems": extra.problems,
            "agreement": extra.agreement,
            "token_file": str(extra.token_file) if extra.token_file else None,
        },
        (heard, out),
        rates_of(made, audio),
    )


def rates_of(made: sources.SourceSet, audio) -> dict:
    """The rates of a round trip for the page: what each decoder wrote, what they were compared at, and
    how much of the original's band there is to compare (a 24 kHz clip has nothing above 12 kHz)."""
    second = made.second_trip
    return {
        "compared_at_hz": made.rate_hz,
        "output_rate_hz": made.trip.decoded.sample_rate,
        "second_output_rate_hz": second.decoded.sample_rate if second is not None else None,
        "original_rate_hz": audio.facts.sample_rate,
        "original_top_hz": made.band.original_top_hz,
    }


def _spectrogram_png(heard: np.ndarray, out: np.ndarray, rate_hz: int, words: dict | None, path: Path) -> Path:
    figure = analysis_metrics.spectrogram_figure(heard, out, rate_hz, words=words)
    return analysis_metrics.figure_to_png(figure, path)


def measure(
    original_path: Path,
    reconstruction_path: Path,
    limits: AudioLimits,
    progress: Progress = quiet,
    judges: Judges = DEFAULT_JUDGES,
) -> MetricsOutput:
    """Objective metrics of a reconstruction against its original (any two files: both are
    read as 24 kHz mono and trimmed to the shorter), by the judging models ``judges`` names."""
    start = time.perf_counter()
    progress(0.1, "job.metrics")
    original = load_audio(original_path, limits).samples
    reconstruction = load_audio(reconstruction_path, limits).samples
    return measure_samples(original, reconstruction, judges, start)


def measure_samples(
    original, reconstruction, judges: Judges = DEFAULT_JUDGES, start: float | None = None, rate_hz: int = SAMPLE_RATE
):
    """:func:`measure` of two clips' samples at ``rate_hz`` (a round trip's record holds them: nothing is read)."""
    start = time.perf_counter() if start is None else start
    metrics = [asdict(m) for m in analysis_metrics.compare(original, reconstruction, rate_hz, judges=judges)]
    return MetricsOutput(metrics, time.perf_counter() - start)


def encode(
    engine,
    source: Path,
    folder: Path,
    limits: AudioLimits,
    progress: Progress = quiet,
    figure_words: dict | None = None,
) -> EncodeOutput:
    """Audio -> token file, with the token usage figure (``figure_words``: webui.views.figure_words)."""
    start = time.perf_counter()
    audio, estimate, encoded = _read_and_encode(engine, "encode", source, limits, progress, 0.3, 0.8)
    progress(0.8, "job.plotting_codes")
    stem = stem_of(source)
    token_file = _token_file(engine, encoded.codes, encoded.original_samples)
    path = tokens.save_tokens(token_file, folder / f"{stem}_tokens.npz")
    usage = token_usage.usage_figure(encoded.codes, words=(figure_words or {}).get("usage"))
    heatmap = analysis_metrics.figure_to_png(usage, folder / f"{stem}_usage.png")
    return EncodeOutput(
        path,
        heatmap,
        audio.facts.to_dict(),
        token_file.summary(audio.facts.pcm_bps),
        _timing(start, encoded) | {"estimate": estimate},
    )


def decode(
    engine, source: Path, folder: Path, progress: Progress = quiet, figure_words: dict | None = None
) -> DecodeOutput:
    """Token file -> audio, with its spectrogram (``figure_words``: webui.views.figure_words)."""
    start = time.perf_counter()
    progress(0.05, "job.reading_tokens")
    token_file = tokens.load_tokens(source, max_duration_s=engine.settings.max_duration_s)
    estimate = _preflight(engine, "decode", token_file.frames * SAMPLES_PER_FRAME, progress, 0.15)
    progress(0.2, "job.decoding")
    decoded = engine.decode(
        token_file.codes,
        original_samples=token_file.original_samples,
        progress=_span(progress, 0.2, 0.8, "job.decoding_part"),
    )
    progress(0.8, "job.plotting")
    stem = stem_of(source).removesuffix("_tokens")
    wav = write_wav(folder / f"{stem}_decoded.wav", decoded.samples, decoded.sample_rate)
    words = figure_words or {}
    title = words.get("decoded") or "Decoded audio: log-mel spectrogram"  # i18n-exempt: the CLI's, in English
    figure = analysis_metrics.single_spectrogram_figure(
        decoded.samples, decoded.sample_rate, title=title, words=words.get("spectrogram")
    )
    png = analysis_metrics.figure_to_png(figure, folder / f"{stem}_spectrogram.png")
    meta = {
        "model_source": token_file.model_source,
        "created": token_file.created,
        "versions": dict(token_file.versions),
        "decoder_rate_hz": token_file.decoder_rate_hz,  # the decoder the codes were made beside (None: not recorded)
        "output_rate_hz": decoded.sample_rate,  # the decoder that decoded them here
    }
    return DecodeOutput(wav, png, meta, token_file.summary(), _timing(start, decoded=decoded) | {"estimate": estimate})
