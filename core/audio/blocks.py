"""Audio arriving in blocks: each block is checked, downmixed to mono and resampled to 24 kHz as it
comes, so a long multichannel file never sits in memory whole; then the facts about it.

Every reader (``core.audio.readers``) and ``audio_from_array`` feed a :class:`Collector`;
:func:`finish` turns it into an :class:`Audio` with its :class:`AudioFacts`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field

import numpy as np
import soxr

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.errors import AudioInputError
from core.settings import AudioLimits
from core.units import minutes

logger = logging.getLogger(__name__)

CLIP_LEVEL = 0.999  # |x| at or above this counts as clipped
OVER_FULL_SCALE = 1.0 + 1e-6  # |x| above this (float audio) is named in a warning (+0 dBFS)
NEAR_SILENCE_DBFS = -60.0  # dBFS, RMS below this is "nearly silent"
SILENCE_FLOOR_DBFS = -120.0  # dBFS, reported for digital silence instead of -inf
RESAMPLE_QUALITY = "HQ"  # soxr high quality (20-bit precision, flat passband)
BLOCK_FRAMES = 1 << 16  # frames decoded, checked and resampled at a time
TRUNCATION_TOLERANCE = 0.02  # fraction of the declared length that may be missing
PCM_BITS = 16  # bits per sample of the PCM the compression ratio compares against


@dataclass(frozen=True)
class AudioFacts:
    name: str  # file name (no directory) or a label like "microphone"
    format: str  # container/codec as detected, e.g. "wav", "ogg/vorbis", "m4a/aac"
    sample_rate: int  # original rate, Hz
    channels: int  # original channel count
    duration_s: float  # seconds
    peak: float  # max |x| of the mono 24 kHz signal
    clipped_samples: int  # samples with |x| >= CLIP_LEVEL in the original (before downmix)
    rms_dbfs: float  # loudness of the mono signal
    near_silent: bool  # rms below NEAR_SILENCE_DBFS
    warnings: tuple[str, ...] = field(default=())  # sentences to show the user

    @property
    def pcm_bps(self) -> float:
        """Bit/s of the original as 16-bit PCM at its own rate and channel count."""
        return float(self.sample_rate * self.channels * PCM_BITS)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["warnings"] = list(self.warnings)
        return d


@dataclass(frozen=True)
class Audio:
    samples: np.ndarray  # float32 mono at SAMPLE_RATE, shape (n,)
    facts: AudioFacts  # where it came from and what was done to it
    # the same clip at ``AudioLimits.keep_rate_hz``, resampled from the file's own rate, when that rate is
    # above 24 kHz and a caller asked for it (its band above 12 kHz, for judging a 48 kHz decoder); else None
    kept: np.ndarray | None = field(default=None, repr=False, compare=False)
    kept_rate_hz: int | None = None


@dataclass(frozen=True)
class Source:
    format: str  # as AudioFacts.format
    sample_rate: int  # Hz
    channels: int  # channel count
    declared_frames: int | None  # frames the header promises; None when unknown


def check_declared(name: str, source: Source, limits: AudioLimits) -> None:
    """Refuse a file whose header already says it is too long, before decoding it."""
    if source.declared_frames is None:
        return
    seconds = source.declared_frames / source.sample_rate
    if seconds > limits.max_duration_s:
        raise AudioInputError(too_long(name, seconds, limits.max_duration_s))


def check_complete(name: str, source: Source, frames: int, decoder_errors: str = "") -> None:
    """Refuse a file that holds clearly less audio than its header promises (``decoder_errors``:
    what the decoder reported on the way, named in the refusal)."""
    declared = source.declared_frames
    if declared is None:
        return
    missing = declared - frames
    one_frame = SAMPLES_PER_FRAME / SAMPLE_RATE * source.sample_rate  # in original frames
    allowed = max(TRUNCATION_TOLERANCE * declared, one_frame)
    if missing > allowed:
        raise AudioInputError(
            f"'{name}' is cut off: its header promises {declared / source.sample_rate:.2f} s of "
            f"audio but the file holds only {frames / source.sample_rate:.2f} s. It was probably "
            "not copied or uploaded completely; get the complete file or re-export it."
            + (f" (The decoder reported damaged data: {decoder_errors}.)" if decoder_errors else "")
        )


def too_long(name: str, seconds: float, max_s: float) -> str:
    return (
        f"'{name}' is {minutes(seconds)} long, over the {minutes(max_s)} "
        "limit. Cut it into shorter pieces and try again."
    )


class Collector:
    """Takes decoded blocks of shape (k, channels): checks them, counts clipping, downmixes
    to mono and resamples to 24 kHz as they arrive."""

    def __init__(self, name: str, source: Source, limits: AudioLimits):
        self.name = name
        self.source = source
        self.limits = limits
        self.max_frames = limits.max_duration_s * source.sample_rate
        self.frames = 0  # original frames seen
        self.clipped = 0  # original samples (all channels) at or above CLIP_LEVEL
        self.sum_squares = 0.0  # of the mono 24 kHz output, in float64
        self.peak = 0.0  # of the mono 24 kHz output
        self.loudest = 0.0  # max |x| of the original (any channel)
        self.parts: list[np.ndarray] = []
        self.stream = None
        self.flushed = False  # the resampler's tail is out: no more blocks
        if source.sample_rate != SAMPLE_RATE:
            self.stream = soxr.ResampleStream(
                source.sample_rate, SAMPLE_RATE, 1, dtype="float32", quality=RESAMPLE_QUALITY
            )
        self.kept = _Kept.of(source.sample_rate, limits.keep_rate_hz)  # the clip above 24 kHz, when asked

    def add(self, block: np.ndarray) -> np.ndarray:
        """Check and keep a block; return the 24 kHz mono samples it completed (live input reads them)."""
        if self.flushed:
            raise AudioInputError(f"'{self.name}' has ended; no more audio can be added.")
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            first = (self.frames + int(np.argmin(finite))) / self.source.sample_rate
            raise AudioInputError(
                f"'{self.name}' contains NaN or infinite sample values (the first at "
                f"{first:.2f} s). The file is damaged or was written by a broken program; "
                "re-export it."
            )
        loudest = float(np.abs(block).max()) if block.size else 0.0
        if loudest > self.limits.max_peak:
            at = (self.frames + int(np.argmax(np.abs(block).max(axis=1)))) / self.source.sample_rate
            raise AudioInputError(
                f"'{self.name}' is far over full scale: a sample of {loudest:.3g} at {at:.2f} s is "
                f"{dbfs(loudest):+.0f} dBFS, over the {dbfs(self.limits.max_peak):+.0f} dBFS limit (1.0 is full "
                "scale). The file was written with the wrong scale or by a broken program; normalize or "
                "re-export it."
            )
        self.loudest = max(self.loudest, loudest)
        self.frames += block.shape[0]
        if self.frames > self.max_frames:
            raise AudioInputError(
                f"'{self.name}' is longer than the {minutes(self.limits.max_duration_s)} "
                "limit. Cut it into shorter pieces and try again."
            )
        self.clipped += int(np.count_nonzero(np.abs(block) >= CLIP_LEVEL))
        mono = block[:, 0] if block.shape[1] == 1 else block.mean(axis=1, dtype=np.float32)
        if self.kept is not None:
            self.kept.add(mono)
        mono = mono if self.stream is None else self.stream.resample_chunk(mono)
        self._keep(mono)
        return mono

    def flush(self) -> np.ndarray:
        """The resampler's last samples, kept and returned (once); the input then takes no more blocks."""
        tail = np.zeros(0, np.float32)
        if self.stream is not None and not self.flushed:
            tail = self.stream.resample_chunk(np.zeros(0, np.float32), last=True)
            self._keep(tail)
        if self.kept is not None and not self.flushed:
            self.kept.flush()
        self.flushed = True
        return tail

    def finish(self) -> np.ndarray:
        self.flush()
        if not self.parts:
            return np.zeros(0, np.float32)
        return np.ascontiguousarray(np.concatenate(self.parts), dtype=np.float32)

    def _keep(self, mono: np.ndarray) -> None:
        if mono.size == 0:
            return
        self.parts.append(mono)
        self.sum_squares += float(np.dot(mono.astype(np.float64), mono.astype(np.float64)))
        self.peak = max(self.peak, float(np.abs(mono).max()))


class _Kept:
    """The clip at a rate above 24 kHz, resampled from the file's own rate as blocks arrive."""

    def __init__(self, source_hz: int, rate_hz: int):
        self.rate_hz = rate_hz
        self.stream = (
            None
            if source_hz == rate_hz
            else soxr.ResampleStream(source_hz, rate_hz, 1, dtype="float32", quality=RESAMPLE_QUALITY)
        )
        self.parts: list[np.ndarray] = []

    @classmethod
    def of(cls, source_hz: int, rate_hz: int | None) -> _Kept | None:
        """Only for a file above 24 kHz and a caller that asked for a rate above 24 kHz."""
        if rate_hz is None or rate_hz <= SAMPLE_RATE or source_hz <= SAMPLE_RATE:
            return None
        return cls(source_hz, rate_hz)

    def add(self, mono: np.ndarray) -> None:
        out = mono.copy() if self.stream is None else self.stream.resample_chunk(mono)
        if out.size:
            self.parts.append(out)

    def flush(self) -> None:
        tail = (
            np.zeros(0, np.float32)
            if self.stream is None
            else self.stream.resample_chunk(np.zeros(0, np.float32), last=True)
        )
        if tail.size:
            self.parts.append(tail)

    def samples(self) -> np.ndarray:
        return np.ascontiguousarray(np.concatenate(self.parts) if self.parts else np.zeros(0), dtype=np.float32)


def finish(
    name: str, source: Source, collector: Collector, limits: AudioLimits, extra_warnings: tuple[str, ...] = ()
) -> Audio:
    if collector.frames == 0:
        raise AudioInputError(
            f"'{name}' contains no audio samples. It may be damaged or cut off; record or export it again."
        )
    mono = collector.finish()
    duration_s = collector.frames / source.sample_rate
    if mono.size < limits.min_samples:
        raise AudioInputError(
            f"'{name}' is {duration_s * 1000:.0f} ms long; the codec needs at least "
            f"{limits.min_samples / SAMPLE_RATE * 1000:.0f} ms (one frame). Give a longer clip."
        )
    rms = math.sqrt(collector.sum_squares / mono.size)
    rms_dbfs = max(SILENCE_FLOOR_DBFS, 20 * math.log10(rms)) if rms > 0 else SILENCE_FLOOR_DBFS
    facts = AudioFacts(
        name=name,
        format=source.format,
        sample_rate=source.sample_rate,
        channels=source.channels,
        duration_s=duration_s,
        peak=collector.peak,
        clipped_samples=collector.clipped,
        rms_dbfs=round(rms_dbfs, 2),
        near_silent=rms_dbfs < NEAR_SILENCE_DBFS,
        warnings=(*extra_warnings, *_warnings(source, collector.clipped, rms_dbfs, collector.loudest)),
    )
    logger.info(
        "Loaded %s: %s, %d Hz, %d ch, %.2f s, %.1f dBFS",
        name,
        facts.format,
        facts.sample_rate,
        facts.channels,
        facts.duration_s,
        facts.rms_dbfs,
    )
    kept = collector.kept
    if kept is None:
        return Audio(samples=mono, facts=facts)
    return Audio(samples=mono, facts=facts, kept=kept.samples(), kept_rate_hz=kept.rate_hz)


def dbfs(level: float) -> float:
    """A sample magnitude in dB relative to full scale (1.0)."""
    return 20 * math.log10(level) if level > 0 else SILENCE_FLOOR_DBFS


def _warnings(source: Source, clipped: int, rms_dbfs: float, loudest: float = 0.0) -> tuple[str, ...]:
    out = []
    if source.sample_rate != SAMPLE_RATE:
        out.append(f"Resampled from {source.sample_rate} Hz to {SAMPLE_RATE} Hz.")
    if source.channels == 2:
        out.append("Stereo downmixed to mono.")
    elif source.channels > 2:
        out.append(f"{source.channels} channels downmixed to mono.")
    if clipped == 1:
        out.append("1 sample is clipped.")
    elif clipped > 1:
        out.append(f"{clipped} samples are clipped.")
    if rms_dbfs < NEAR_SILENCE_DBFS:
        out.append(f"The clip is nearly silent ({rms_dbfs:.0f} dBFS).")
    if loudest > OVER_FULL_SCALE:
        out.append(
            f"The peak is {dbfs(loudest):+.0f} dBFS, over full scale (float samples above 1.0): it clips when "
            "played and its levels are not comparable; normalize it."
        )
    return tuple(out)


def to_float32(x: np.ndarray) -> np.ndarray:
    """Integer samples scaled to [-1, 1) (unsigned ones centred first); floats as they are."""
    if np.issubdtype(x.dtype, np.floating):
        return x.astype(np.float32, copy=False)
    info = np.iinfo(x.dtype)
    half = (int(info.max) + 1) // 2 if info.min == 0 else -int(info.min)
    offset = half if info.min == 0 else 0
    return ((x.astype(np.float64) - offset) / half).astype(np.float32)
