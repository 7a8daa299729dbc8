"""The MUSHRA low-pass anchors: the original through a steep linear-phase low-pass filter.

A Kaiser-windowed sinc (FIR) whose pass band ends at the cut-off and whose stop band, from
``STOP_FACTOR`` x the cut-off up, is ``STOP_DB`` down. Linear phase with its delay taken off, so the
anchor stays sample-aligned with the original. Filtered by FFT in blocks (overlap-save), so memory
stays bounded on long clips; numpy only (SciPy's import alone took 1.5-2 s here, more than the
filtering of a 30-minute clip).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from core.codec import SAMPLE_RATE

STOP_DB = 80.0  # stop-band attenuation
STOP_FACTOR = 1.1  # the stop band starts at this multiple of the cut-off (3.5 kHz -> 3.85 kHz)
FFT_SIZE = 1 << 16  # samples per FFT block (2.7 s at 24 kHz)


@functools.lru_cache(maxsize=8)
def taps(cutoff_hz: float, rate: int = SAMPLE_RATE) -> np.ndarray:
    """The filter (odd length, symmetric): Kaiser's design rules for ``STOP_DB`` over the transition."""
    transition = 2 * math.pi * cutoff_hz * (STOP_FACTOR - 1) / rate  # rad/sample
    length = math.ceil((STOP_DB - 8.0) / (2.285 * transition)) | 1  # Kaiser's estimate, made odd
    beta = 0.1102 * (STOP_DB - 8.7)
    middle = cutoff_hz * (1 + STOP_FACTOR) / 2 / rate  # the -6 dB point, cycles/sample
    n = np.arange(length) - (length - 1) / 2
    h = 2 * middle * np.sinc(2 * middle * n) * np.kaiser(length, beta)
    return (h / h.sum()).astype(np.float64)  # unity gain at 0 Hz


def lowpass(samples: np.ndarray, cutoff_hz: float, rate: int = SAMPLE_RATE) -> np.ndarray:
    """``samples`` low-passed at ``cutoff_hz``, without delay (float32, same length)."""
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    h = taps(float(cutoff_hz), rate)
    delay = (h.size - 1) // 2
    size = max(FFT_SIZE, 1 << (2 * h.size).bit_length())
    step = size - h.size + 1  # new output samples per block
    spectrum = np.fft.rfft(h, size)
    padded = np.concatenate([np.zeros(h.size - 1, np.float32), x, np.zeros(delay, np.float32)])
    out = np.empty(x.size + delay, dtype=np.float32)
    for start in range(0, out.size, step):
        block = padded[start : start + size]
        filtered = np.fft.irfft(np.fft.rfft(block, size) * spectrum, size)[h.size - 1 : h.size - 1 + step]
        count = min(step, out.size - start)
        out[start : start + count] = filtered[:count]
    return out[delay:]
