"""Round trip of short test tones at the sample rates people upload (8, 16, 44.1, 48 kHz):
each is read the way uploads are read (resampled to 24 kHz), encoded and decoded; the codes
must be non-empty and of the length the codec's frame rate gives."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.audio.files import audio_from_array
from core.codec import NUM_CODEBOOKS, num_frames
from core.doctor.findings import FAIL, PASS, SKIPPED, Finding, finding
from core.doctor.words import said

TONE_RATES_HZ = (8_000, 16_000, 44_100, 48_000)  # sample rates of the test tones
TONE_S = 1.0  # seconds per tone
TONE_HZ = 440.0  # pitch of the tone


def tone(sample_rate: int, seconds: float = TONE_S) -> np.ndarray:
    t = np.arange(round(seconds * sample_rate)) / sample_rate
    return (0.3 * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)


def check_tones(encode: Callable | None, decode: Callable | None, rates: tuple[int, ...] = TONE_RATES_HZ) -> Finding:
    """``encode(samples_24k) -> codes (frames, 16)`` and ``decode(codes) -> samples``: the engine's
    ``encode_array(...).codes`` and ``decode(...).samples``."""
    name, title = "tones", "Test tones at 8 / 16 / 44.1 / 48 kHz round-trip"
    if encode is None or decode is None:
        return finding(name, title, SKIPPED, said("no_model"))
    results, problems = {}, []
    for rate in rates:
        audio = audio_from_array(tone(rate), rate, name=f"tone_{rate}")
        expected = num_frames(audio.samples.size)
        try:
            codes = np.asarray(encode(audio.samples))
            decoded = np.asarray(decode(codes)) if codes.size else np.zeros(0)
        except Exception as e:  # noqa: BLE001 (a check reports, never raises)
            problems.append(said("tone_error", rate=rate, error=f"{type(e).__name__}: {e}"))
            continue
        results[str(rate)] = {
            "frames": int(codes.shape[0]) if codes.ndim == 2 else 0,
            "expected_frames": expected,
            "decoded_samples": int(decoded.size),
        }
        if codes.size == 0:
            problems.append(said("tone_empty", rate=rate))
        elif codes.shape != (expected, NUM_CODEBOOKS):
            shape = str(tuple(codes.shape))
            problems.append(said("tone_shape", rate=rate, shape=shape, expected=expected, books=NUM_CODEBOOKS))
        elif decoded.size < audio.samples.size or not np.isfinite(decoded).all():
            problems.append(said("tone_decoded", rate=rate, got=int(decoded.size), want=int(audio.samples.size)))
    if problems:
        return finding(
            name,
            title,
            FAIL,
            tuple(problems),
            said("fix_tones"),
            results=results,
        )
    frames = ", ".join(f"{int(r) / 1000:g} kHz → {v['frames']}" for r, v in results.items())
    ok = said("tones_ok", seconds=TONE_S, books=NUM_CODEBOOKS, frames=frames)
    return finding(name, title, PASS, ok, results=results)
