"""Where two decodes of the same codes line up: the offset by cross-correlation, in samples, and
whether it drifts (samples lost or added part-way, as a decoder that drops samples at its seams does).

The search is bounded: one excerpt of ``EXCERPT_S`` seconds (the earliest loud one of a few candidates) against
lags up to ``MAX_LAG_S``, through one FFT, so a 30-minute clip costs what a 20-second one does.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from core.codec import SAMPLE_RATE

MAX_LAG_S = 0.5  # offsets searched: ± this many seconds
EXCERPT_S = 20.0  # seconds of the reference correlated
CANDIDATES = 8  # excerpt positions tried (the earliest loud one is used)
EARLY_SHARE = 0.25  # ... loud: at least this share of the loudest candidate's energy
DRIFT_WINDOW_S = 2.0  # seconds per drift probe
DRIFT_LAG_S = 0.05  # ± lag of each drift probe around the global offset
DRIFT_PROBES = 24  # drift probes spread over the clip
DRIFT_MIN_CORRELATION = 0.5  # a probe whose best match is weaker says nothing


@dataclass(frozen=True)
class Alignment:
    offset_samples: int  # their sample i + offset is our sample i (positive: their audio starts late)
    correlation: float  # normalised cross-correlation at that offset (NaN: silence, nothing to align)
    polarity: int  # +1, or -1 when their audio is upside down
    max_lag_samples: int  # the search range, ± samples

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Drift:
    time_s: float  # where the probe sits in our audio
    offset_samples: int  # the offset found there
    correlation: float


def _next_fast(n: int) -> int:
    return 1 << max(1, math.ceil(math.log2(max(n, 2))))


def _best_lag(a: np.ndarray, b: np.ndarray, lag: int) -> tuple[int, float]:
    """The lag k in [-lag, lag] maximising |Σ a[i] b[i + k + lag]| / (‖a‖ ‖b's window‖), and that value
    (signed). ``b`` holds len(a) + 2 lag samples: b[j] is their sample at our index j - lag."""
    n = _next_fast(b.size + a.size)
    raw = np.fft.irfft(np.fft.rfft(b, n) * np.conj(np.fft.rfft(a, n)), n)[: 2 * lag + 1]
    energy = np.concatenate([[0.0], np.cumsum(b.astype(np.float64) ** 2)])
    window = energy[a.size : a.size + 2 * lag + 1] - energy[: 2 * lag + 1]
    norm = np.sqrt(np.maximum(window, 0.0) * float(np.dot(a, a)))
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(norm > 0, raw / np.where(norm > 0, norm, 1.0), 0.0)
    k = int(np.argmax(np.abs(score)))
    return k - lag, float(score[k])


def _padded(x: np.ndarray, start: int, stop: int) -> np.ndarray:
    """x[start:stop] with zeros where the range falls outside x."""
    out = np.zeros(stop - start, dtype=np.float64)
    lo, hi = max(start, 0), min(stop, x.size)
    if hi > lo:
        out[lo - start : hi - start] = x[lo:hi]
    return out


def _early_excerpt(ours: np.ndarray, length: int) -> int:
    """The earliest of a few excerpt positions with at least a quarter of the loudest one's energy: the
    offset is the one at the start (a decoder that loses samples later shows as drift, not as offset)."""
    if ours.size <= length:
        return 0
    starts = np.linspace(0, ours.size - length, CANDIDATES).astype(int)
    energy = [float(np.dot(ours[s : s + length], ours[s : s + length])) for s in starts]
    return int(next(s for s, e in zip(starts, energy, strict=True) if e >= EARLY_SHARE * max(energy)))


def find_offset(
    ours: np.ndarray, theirs: np.ndarray, max_lag_s: float = MAX_LAG_S, rate_hz: int = SAMPLE_RATE
) -> Alignment:
    """The offset of ``theirs`` against ``ours`` (both mono at ``rate_hz``: the decoder's)."""
    lag = int(max_lag_s * rate_hz)
    length = min(ours.size, int(EXCERPT_S * rate_hz))
    start = _early_excerpt(ours, length)
    a = ours[start : start + length].astype(np.float64)
    if not np.any(a) or not np.any(theirs):
        return Alignment(0, float("nan"), 1, lag)
    k, score = _best_lag(a, _padded(theirs, start - lag, start + length + lag), lag)
    return Alignment(k, abs(score), 1 if score >= 0 else -1, lag)


def drift(ours: np.ndarray, theirs: np.ndarray, offset: int, rate_hz: int = SAMPLE_RATE) -> list[Drift]:
    """The offset measured again at probes spread over the clip (± ``DRIFT_LAG_S`` around ``offset``);
    only the probes that found a clear match."""
    length, lag = int(DRIFT_WINDOW_S * rate_hz), int(DRIFT_LAG_S * rate_hz)
    if ours.size < 2 * length:
        return []
    found = []
    for start in np.linspace(0, ours.size - length, DRIFT_PROBES).astype(int):
        a = ours[start : start + length].astype(np.float64)
        if not np.any(a):
            continue
        k, score = _best_lag(a, _padded(theirs, start + offset - lag, start + offset + length + lag), lag)
        if abs(score) >= DRIFT_MIN_CORRELATION:
            found.append(Drift(round(start / rate_hz, 3), offset + k, abs(score)))
    return found


def aligned(ours: np.ndarray, theirs: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(our part, their part, first of our samples) where both have samples once ``theirs`` is shifted
    by ``offset``: their sample i + offset beside our sample i."""
    first = max(0, -offset)
    last = min(ours.size, theirs.size - offset)
    if last <= first:
        return ours[:0], theirs[:0], 0
    return ours[first:last], theirs[first + offset : last + offset], first
