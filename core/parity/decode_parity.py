"""Decode parity: the WAV another implementation made from some codes against this workbench's
reference decode of the same codes (``Engine.decode``: seam-exact, equal to a whole-utterance decode; on a
GPU in strict fp32, TF32 off).

Measured on the samples both have once aligned (``core.parity.alignment``): the offset, the length
difference, correlation, SNR, the largest difference in 16-bit steps (LSB), an error curve over time
(``CURVE_WINDOW_S`` windows, max |difference|), the frames where the error starts (``core.parity.seams``)
and clicks. ``core.parity.verdict`` turns them into words.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.analysis.timeline import decimate
from core.codec import BASE_OUTPUT, SAMPLE_RATE, SAMPLES_PER_FRAME, OutputRate
from core.parity import alignment as parity_alignment
from core.parity import seams, verdict
from core.parity.inputs import Codes, TheirAudio, load_codes, load_their_wav
from core.parity.precision import tf32

logger = logging.getLogger(__name__)

LSB = verdict.LSB  # one step of 16-bit PCM
CURVE_WINDOW_S = 0.02  # seconds per point of the error curve
CURVE_POINTS = 2000  # points of the curve kept for the page and the report (max over groups)


@dataclass(frozen=True)
class Curve:
    times_s: list[float]
    max_lsb: list[float]  # max |difference| in each window, 16-bit steps
    window_s: float


@dataclass(frozen=True)
class DecodeParity:
    frames: int
    reference_samples: int  # frames × 1920, or the token file's original length when their WAV is trimmed to it
    original_samples: int | None  # the clip's length, when the codes came in a token file
    their_samples: int
    trimmed: bool  # their WAV ends at the token file's original length (and the reference was trimmed to it)
    length_difference: int  # their samples - reference samples (after the offset is taken off)
    alignment: parity_alignment.Alignment
    drift: list[parity_alignment.Drift]
    compared_samples: int
    correlation: float
    snr_db: float  # inf when identical
    max_abs_lsb: float
    rms_error_lsb: float
    first_difference_sample: int | None  # the first of our samples differing by more than the rounding level
    onsets: list[int]  # frames where the difference starts or jumps
    official_seams: list[int]  # frames of the official 300-frame chunking in this clip
    clicks: list[seams.Click]
    curve: Curve
    their_rms: float
    reference_rms: float
    codes: Codes
    their: TheirAudio
    seconds: dict = field(default_factory=dict)  # reference_s, compare_s
    verdict: verdict.Verdict | None = None
    rate_hz: int = SAMPLE_RATE  # the reference decoder's rate: both sides compared at it (48 kHz against 48 kHz)
    samples_per_frame: int = SAMPLES_PER_FRAME  # its samples a frame (3,840 at 48 kHz)
    delay_cut_samples: int = 0  # a delay inside a WAV of the reference's length: the reference's tail not compared

    @property
    def first_difference_s(self) -> float | None:
        return None if self.first_difference_sample is None else self.first_difference_sample / self.rate_hz

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "rate_hz": self.rate_hz,
            "frames": self.frames,
            "reference_samples": self.reference_samples,
            "original_samples": self.original_samples,
            "their_samples": self.their_samples,
            "trimmed": self.trimmed,
            "delay_cut_samples": self.delay_cut_samples,
            "length_difference_samples": self.length_difference,
            "alignment": self.alignment.to_dict(),
            "drift": [d.__dict__ for d in self.drift],
            "compared_samples": self.compared_samples,
            "correlation": _finite(self.correlation),
            "snr_db": _finite(self.snr_db),
            "max_abs_lsb": round(self.max_abs_lsb, 3),
            "rms_error_lsb": round(self.rms_error_lsb, 4),
            "first_difference_s": self.first_difference_s,
            "first_difference_sample": self.first_difference_sample,
            "onsets_frames": self.onsets,
            "official_seams_frames": self.official_seams,
            "clicks": [c.to_dict() for c in self.clicks],
            "curve": {"times_s": self.curve.times_s, "max_lsb": self.curve.max_lsb, "window_s": self.curve.window_s},
            "their_rms": _finite(self.their_rms),
            "reference_rms": _finite(self.reference_rms),
            "codes": {"kind": self.codes.kind, "notes": list(self.codes.notes)},
            "their_wav": {
                "sample_rate": self.their.sample_rate,
                "channels": self.their.channels,
                "subtype": self.their.subtype,
                "nonfinite": self.their.nonfinite,
                "first_nonfinite_s": self.their.first_nonfinite_s,
                "notes": list(self.their.notes),
            },
            "seconds": self.seconds,
        }


def _finite(x: float):
    """JSON has no NaN or infinity: None ("not available") and the string "inf" for identical audio."""
    if x is None or math.isnan(x):
        return None
    return "inf" if math.isinf(x) else round(float(x), 4)


def compare(ours: np.ndarray, their: TheirAudio, codes: Codes, output: OutputRate = BASE_OUTPUT) -> DecodeParity:
    """Their audio against ``ours`` (the reference decode, frames × ``output.samples_per_frame`` samples), both
    at ``output.rate_hz`` (a 48 kHz port against the 48 kHz reference)."""
    started = time.perf_counter()
    theirs, rate, per_frame = their.samples, output.rate_hz, output.samples_per_frame
    found = parity_alignment.find_offset(ours, theirs, rate_hz=rate)
    offset = found.offset_samples
    trimmed = False
    original = None if codes.original_samples is None else output.samples_for(codes.original_samples)
    if original is not None and original != ours.size:
        end = theirs.size - offset  # where their audio ends, in our samples
        if abs(end - original) < abs(end - ours.size):  # they trimmed, as the token file says
            ours, trimmed = ours[:original], True
    delay_cut = 0
    if offset > 0 and theirs.size == ours.size:  # a delay inside a file of the reference's length
        ours, delay_cut = ours[: ours.size - offset], offset
    flipped = theirs if found.polarity > 0 else -theirs
    a, b, first = parity_alignment.aligned(ours, flipped, offset)
    diff = -ours.copy()  # where they have nothing, the difference is all of ours
    diff[first : first + a.size] = b - a
    errors = np.abs(diff)
    threshold = verdict.ROUNDING_LSB * LSB
    over = np.flatnonzero(errors > threshold)
    onset_frames = seams.onsets(seams.frame_errors(diff, per_frame), threshold)
    official = seams.official_seams(codes.frames)
    window = int(CURVE_WINDOW_S * rate)
    pad = (-errors.size) % window
    curve_values = np.pad(errors, (0, pad)).reshape(-1, window).max(axis=1) / LSB
    times, values = decimate(curve_values, CURVE_WINDOW_S, CURVE_POINTS)
    error_energy = float(np.dot(diff.astype(np.float64), diff))
    signal_energy = float(np.dot(ours.astype(np.float64), ours))
    if error_energy == 0:
        snr = math.inf
    else:
        snr = 10 * math.log10(signal_energy / error_energy) if signal_energy > 0 else math.nan
    result = DecodeParity(
        frames=codes.frames,
        reference_samples=int(ours.size),
        original_samples=codes.original_samples,
        their_samples=int(theirs.size),
        trimmed=trimmed,
        delay_cut_samples=delay_cut,
        length_difference=int(theirs.size - offset - ours.size),
        alignment=found,
        drift=parity_alignment.drift(ours, flipped, offset, rate) if over.size else [],
        compared_samples=int(a.size),
        correlation=_correlation(a, b),
        snr_db=snr,
        max_abs_lsb=float(errors.max() / LSB) if errors.size else 0.0,
        rms_error_lsb=float(math.sqrt(error_energy / max(errors.size, 1)) / LSB),
        first_difference_sample=int(over[0]) if over.size else None,
        onsets=onset_frames,
        official_seams=official,
        clicks=seams.clicks(diff, LSB, official, onset_frames, per_frame, rate),
        curve=Curve([round(float(t), 3) for t in times], [round(float(v), 2) for v in values], CURVE_WINDOW_S),
        their_rms=float(np.sqrt(np.mean(np.square(theirs, dtype=np.float64)))) if theirs.size else 0.0,
        reference_rms=float(np.sqrt(np.mean(np.square(ours, dtype=np.float64)))),
        codes=codes,
        their=their,
        seconds={"compare_s": round(time.perf_counter() - started, 3)},
        rate_hz=rate,
        samples_per_frame=per_frame,
    )
    return verdict.judge(result, ours, diff)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2:
        return math.nan
    x, y = a.astype(np.float64) - a.mean(), b.astype(np.float64) - b.mean()
    norm = math.sqrt(float(np.dot(x, x)) * float(np.dot(y, y)))
    return float(np.dot(x, y) / norm) if norm > 0 else math.nan


def check_decode(engine, codes_path, wav_path, progress=None) -> DecodeParity:
    """Read the codes and their WAV (checked against the engine's limits), decode the codes with the
    engine (the reference), compare. ``progress(fraction)`` follows the reference decode."""
    limits = engine.settings.audio_limits()
    codes = load_codes(Path(codes_path), limits.max_duration_s)
    their = load_their_wav(Path(wav_path), limits, codes, engine.output_rate)  # at the reference decoder's rate
    started = time.perf_counter()
    with tf32(False):  # on a GPU the reference is strict fp32 (PyTorch's default lets convolutions use TF32)
        ours = engine.decode(codes.codes, progress=progress).samples  # untrimmed: frames × samples a frame
    reference_s = time.perf_counter() - started
    result = compare(np.asarray(ours, dtype=np.float32), their, codes, engine.output)
    result.seconds["reference_s"] = round(reference_s, 3)
    logger.info("decode parity: %s", result.verdict.sentence if result.verdict else "")
    return result
