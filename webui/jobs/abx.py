"""The blind test's audio work, without Gradio: the region cut from the clip, B made from it, A and
B written as dithered 16-bit WAVs, and X written anew for every trial.

A and B are 16-bit WAVs with their own dither, and X is written for each trial from A's
or B's samples with a fresh dither (one least significant bit, -96 dBFS: inaudible), so X's bytes
(and hash) never equal A's or B's; a script can still tell them apart by decoding and comparing
samples, a listener cannot. Every file lives in a folder found from the session's token alone (no
path ever comes from the client). Errors about the input carry a catalogue key
(:class:`BlindInputError`) that the tab words in the reader's language.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from core import anchors
from core.audio import rates
from core.codec import SAMPLE_RATE
from core.errors import CodecError
from core.judging.sources import COMPARE_ID
from core.listening import abx
from core.model import second

MIN_REGION_S = 1.0  # s; shorter regions are too short to judge
FOLDER_PREFIX = "abx-"  # a session's folder: this, then a hash of its token


class BlindInputError(CodecError):
    """A blind-test input that cannot be used: ``key`` is the catalogue key of its message."""

    def __init__(self, key: str, **fields):
        self.key, self.fields = key, fields
        super().__init__(key)


NO_SECOND_KEYS = {
    second.LOADING: "second.loading",
    second.FAILED: "second.failed",
    second.NONE: "compare.abx_no_second",
}


def no_second(engine) -> BlindInputError:
    """Why the second checkpoint cannot be a sound of a blind test now, in the reader's words: it is
    still loading (try again in a moment), it failed to load (why), or none is loaded (how to load one)."""
    state, error = second.not_ready(engine)
    return BlindInputError(NO_SECOND_KEYS[state], **({"error": error} if state == second.FAILED else {}))


@dataclass(frozen=True)
class MadeB:
    samples: np.ndarray  # float32 mono, aligned with the region
    source_id: str  # what is stored: "reconstruction", "k2", "opus6", "compare"
    detail: str  # the second checkpoint's model path ("" for the others)
    rate_hz: int = SAMPLE_RATE  # its samples' rate (a 48 kHz decoder's 48000)


def region(samples, start_s, end_s, max_region_s: float, rate_hz: int = SAMPLE_RATE) -> np.ndarray:
    """The selected part of the clip (end 0 or empty: to the end; ``samples`` at ``rate_hz``), at least
    MIN_REGION_S and at most ``max_region_s`` long (Settings.abx_max_region_s: a blind test compares short excerpts)."""
    start, end = _seconds(start_s), _seconds(end_s)
    start = max(start, 0.0)
    duration = samples.size / rate_hz
    end = duration if end <= 0 else min(end, duration)
    if end - start < MIN_REGION_S:
        raise BlindInputError("abx.region_too_short", min=MIN_REGION_S, duration=duration)
    if end - start > max_region_s:
        raise BlindInputError("abx.region_too_long", max=max_region_s, length=end - start)
    return samples[int(start * rate_hz) : int(end * rate_hz)]


def _seconds(value) -> float:
    try:
        seconds = float(value or 0.0)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds):
        raise BlindInputError("abx.bad_region", value=value)
    return seconds


def make_b(engine, what_b: tuple[str, object], samples: np.ndarray, audio) -> MadeB:
    """B's samples and source id: ("level", k) the codec with its first k codebooks, ("anchor",
    an Anchor) a reference codec, ("compare", None) the second checkpoint's reconstruction."""
    kind, value = what_b
    if kind == "anchor":
        assert isinstance(value, anchors.Anchor)
        made = anchors.make_anchors(samples, [value])
        if not made.made:
            raise CodecError(made.problems[0].message)
        return MadeB(made.made[0].samples, value.id, "")
    if kind == "compare":
        other = second.ready_second(engine)
        if other is None:
            raise no_second(engine)
        decoded = other.roundtrip(audio).decoded
        return MadeB(decoded.samples, COMPARE_ID, str(other.settings.model), decoded.sample_rate)
    codebooks = int(value)  # type: ignore[call-overload]
    decoded = engine.roundtrip(audio, codebooks=codebooks).decoded
    return MadeB(decoded.samples, abx.level_id(codebooks), "", decoded.sample_rate)


def pair_at_one_rate(original_at, a_samples, a_rate: int, b: MadeB, region_samples: int, engine_rate: int):
    """A and B at one rate, as long as the region (``region_samples`` at 24 kHz), and that rate: the round
    trip's comparison rate, the highest of theirs and the loaded decoder's (``engine_rate``: beside a 48 kHz
    decoder everything is heard at 48 kHz). ``original_at(rate)``: the region of the original at ``rate``
    (from the file's own samples above 24 kHz: core.audio.rates), used when A is the original (``a_samples``
    None)."""
    rate = rates.comparison_rate([a_rate, b.rate_hz, engine_rate])
    n = rates.length_at(region_samples, rate)
    a = original_at(rate) if a_samples is None else a_samples
    a = rates.to_rate(a, rate if a_samples is None else a_rate, rate, n)
    return a, rates.to_rate(b.samples, b.rate_hz, rate, n), rate


def session_folder(root: Path, folder_prefix: str, token: str) -> Path:
    """The session's media folder under ``root``, found from the token alone."""
    return root / f"{folder_prefix}{FOLDER_PREFIX}{hashlib.sha256(token.encode()).hexdigest()[:32]}"


def write_pair(folder: Path, a_samples, b_samples, rate_hz: int = SAMPLE_RATE) -> tuple[Path, Path]:
    """A and B (both at ``rate_hz``) as 16-bit WAVs, each with a dither of its own, in a new ``folder``."""
    folder.mkdir(parents=True)
    a = write_pcm16(folder / "a.wav", dithered(a_samples), rate_hz)
    return a, write_pcm16(folder / "b.wav", dithered(b_samples), rate_hz)


def write_x(folder: Path, token: str, index: int, x_is: str) -> Path | None:
    """X of trial ``index``: A's or B's 16-bit samples with a fresh dither, under a name only the
    token gives (written once: a repeated call finds it). None when A's or B's file is gone."""
    target = folder / f"x-{hashlib.sha256(f'{token}:{index}'.encode()).hexdigest()[:24]}.wav"
    if target.is_file():
        return target
    source = folder / ("a.wav" if x_is == "A" else "b.wav")
    if not source.is_file():
        return None
    forget_x(folder)
    steps, rate = sf.read(source, dtype="int16")
    return write_pcm16(target, steps.astype(np.int32) + tpdf_lsb(steps.size), rate)


def forget_x(folder: Path) -> None:
    """Remove the trials' X files (after the last answer, or before the next X)."""
    for old in folder.glob("x-*.wav"):
        old.unlink(missing_ok=True)


def tpdf_lsb(size: int) -> np.ndarray:
    """Triangular dither of one 16-bit step: -1, 0 or +1 with chances 1/4, 1/2, 1/4 (fresh each call)."""
    rng = np.random.default_rng(secrets.randbits(64))
    return rng.integers(0, 2, size, dtype=np.int32) - rng.integers(0, 2, size, dtype=np.int32)


def dithered(samples) -> np.ndarray:
    """Float samples as 16-bit steps with TPDF dither (what A and B are played from)."""
    x = np.asarray(samples, dtype=np.float64) * 32767.0
    return np.round(x + tpdf_lsb(x.size)).astype(np.int64)


def write_pcm16(path: Path, steps, rate_hz: int = SAMPLE_RATE) -> Path:
    """16-bit steps (clipped to the range) at ``rate_hz`` as a new WAV; never overwrites."""
    with open(path, "xb") as f:
        sf.write(f, np.clip(steps, -32768, 32767).astype(np.int16), rate_hz, format="WAV", subtype="PCM_16")
    return path
