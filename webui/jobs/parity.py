"""The "Check a port" tab's work, without Gradio: a decode-parity check (their WAV against the reference
decode, with the error-curve PNG and the HTML report written into the request folder), an encode-parity
check, a stream check, and the precision sweep (``core.parity``). Words for the report come in as tables in the reader's
language (``webui.views.parity_view``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from core.audio.files import load_audio
from core.parity import decode_parity, encode_parity, precision, report, stream_check
from core.parity.inputs import load_codes, load_their_wav
from webui.jobs.common import Progress, quiet, stem_of


@dataclass(frozen=True)
class DecodeCheck:
    result: decode_parity.DecodeParity
    png: Path
    html: Path
    seconds: float


def decode_check(
    engine,
    codes_path: Path,
    wav_path: Path,
    folder: Path,
    words: dict | None = None,
    labels: dict | None = None,
    lang: str = "en",
    progress: Progress = quiet,
) -> DecodeCheck:
    """Their WAV against the engine's decode of the codes; the curve and the report in ``folder``."""
    started = time.perf_counter()
    progress(0.0, "parity.job.reference")
    result = decode_parity.check_decode(
        engine, codes_path, wav_path, lambda f: progress(0.8 * f, "parity.job.reference")
    )
    progress(0.85, "parity.job.report")
    random_weights = engine.random_weights
    png, html = report.write_report(result, folder, stem_of(wav_path), words, labels, lang, random_weights)
    return DecodeCheck(result, png, html, time.perf_counter() - started)


def encode_check(engine, audio_path: Path, codes_path: Path, progress: Progress = quiet) -> encode_parity.EncodeParity:
    progress(0.0, "parity.job.encode")
    return encode_parity.check_encode(engine, audio_path, codes_path)


def precision_sweep(engine, audio_path: Path, progress: Progress = quiet) -> precision.Sweep:
    """The sweep of one uploaded clip (read within the engine's limits; its first 60 s)."""
    audio = load_audio(audio_path, engine.settings.audio_limits())
    progress(0.0, "parity.job.sweep")
    return precision.sweep(engine, audio.samples, None, lambda f: progress(f, "parity.job.sweep"))


def stream_check_of(
    engine, codes_path: Path, wav_path: Path, packet_frames: int, progress: Progress = quiet
) -> stream_check.StreamCheck:
    """Their streamed WAV (packets of ``packet_frames`` frames, joined) against the whole decode of the codes."""
    limits = engine.settings.audio_limits()
    codes = load_codes(codes_path, limits.max_duration_s)
    their = load_their_wav(wav_path, limits, codes)
    progress(0.0, "parity.job.stream")
    return stream_check.check_stream(engine, codes.codes, their.samples, packet_frames)
