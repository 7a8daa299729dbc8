"""Quality over time: where in a clip the reconstruction departs from the original.

Two curves on a common grid of ``RESOLUTION_S`` (50 ms) cells:

- log-mel distance (dB): the mean absolute difference of the two log-mel spectrograms
  (``core.analysis.metrics.log_mel``, floored ``TOP_DB`` below the original's loudest cell, as the
  whole-clip "Log-mel distance" metric), averaged over the STFT frames centred in the cell;
- segmental SNR (dB): 10 log10(signal energy / error energy) of each cell, clamped to
  ``SEG_SNR_RANGE_DB`` as is usual for segmental SNR; cells where the original is silent have
  no value (NaN).

The worst moments are the ``WORST_COUNT`` peaks of the log-mel distance smoothed over
``WORST_WINDOW_S``, at least ``WORST_SEPARATION_S`` apart, silent cells excluded; a clip shorter
than the smoothing window has no worst moments (``too_short_for_worst``), but still its curves. Chunk seams are
where a long decode's chunks meet (every ``decode_chunk_frames`` frames): worth a listen.

Long clips are analysed block by block (exactly as a whole-clip pass), and :func:`decimate`
reduces curves for plotting (max for distance, min for SNR: the bad moments survive).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from core.analysis import metrics
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME

RESOLUTION_S = 0.05  # s per timeline cell (the issue asks for <= 100 ms)
SEG_SNR_RANGE_DB = (-10.0, 35.0)  # clamp of each cell's SNR (dB), the usual segmental-SNR convention
SILENT_CELL_RMS = 10 ** (-60 / 20)  # original cells below -60 dBFS RMS have no SNR and cannot be "worst"
WORST_COUNT = 3  # worst moments listed
WORST_WINDOW_S = 0.5  # s of smoothing before picking the worst moments (a moment, not one frame)
WORST_SEPARATION_S = 1.0  # s between two listed worst moments
BLOCK_S = 60.0  # s of audio per log-mel block (bounds memory on 30-minute clips)
PLOT_POINTS = 2000  # default points per curve sent to the browser


@dataclass(frozen=True)
class Moment:
    time_s: float  # centre of the moment
    mel_distance_db: float  # smoothed log-mel distance there
    seg_snr_db: float | None  # lowest segmental SNR within the moment (None: silent)


@dataclass(frozen=True)
class Timeline:
    resolution_s: float  # s per cell
    mel_distance_db: np.ndarray  # (cells,) float32
    seg_snr_db: np.ndarray  # (cells,) float32, NaN where the original is silent
    worst: tuple[Moment, ...]  # worst first
    seams_s: tuple[float, ...]  # where decode chunks meet
    duration_s: float  # length compared (the shorter of the two clips)
    too_short_for_worst: bool = False  # shorter than WORST_WINDOW_S: curves, but no worst moments

    def to_dict(self, max_points: int = PLOT_POINTS) -> dict:
        """JSON-ready, with curves decimated to at most ``max_points`` points."""
        times, dist = decimate(self.mel_distance_db, self.resolution_s, max_points, np.nanmax)
        _, snr = decimate(self.seg_snr_db, self.resolution_s, max_points, np.nanmin)
        return {
            "resolution_s": self.resolution_s,
            "duration_s": self.duration_s,
            "cells": int(self.mel_distance_db.size),
            "time_s": _rounded(times, 3),
            "mel_distance_db": _rounded(dist, 2),
            "seg_snr_db": _rounded(snr, 2),
            "worst": [vars(m) for m in self.worst],
            "seams_s": list(self.seams_s),
            "too_short_for_worst": self.too_short_for_worst,
            "worst_window_s": WORST_WINDOW_S,
        }


def timeline(
    original,
    reconstruction,
    decode_chunk_frames: int | None = None,
    resolution_s: float = RESOLUTION_S,
    mels: tuple[np.ndarray, np.ndarray] | None = None,
    sample_rate: int = SAMPLE_RATE,
) -> Timeline:
    """The quality timeline of ``reconstruction`` against ``original`` (trimmed to the shorter), both at
    ``sample_rate`` (a 48 kHz decoder's comparison rate). ``mels``: their :func:`log_mel_blocks`, when the
    caller has them already (the ladder does)."""
    if not 0 < resolution_s <= 0.1:
        raise ValueError("resolution_s must be in (0, 0.1] seconds")
    ref, deg = metrics._mono(original), metrics._mono(reconstruction)
    n = min(ref.size, deg.size)
    ref, deg = ref[:n], deg[:n]
    cell = max(1, round(resolution_s * sample_rate))
    a, b = mels if mels is not None else (log_mel_blocks(ref, sample_rate), log_mel_blocks(deg, sample_rate))
    frames = 1 + n // metrics.HOP
    distance = _mel_distance_cells(a[:, :frames], b[:, :frames], n, cell)
    snr = _seg_snr_cells(ref, deg, cell)
    silent = np.isnan(snr)
    seams: tuple[float, ...] = ()
    if decode_chunk_frames:
        step = round(decode_chunk_frames * SAMPLES_PER_FRAME * sample_rate / SAMPLE_RATE)
        seams = tuple(s / sample_rate for s in range(step, n, step))
    short = distance.size < _window_cells(cell / sample_rate)
    worst = () if short else _worst(distance, snr, silent, cell / sample_rate)
    return Timeline(cell / sample_rate, distance, snr, worst, seams, n / sample_rate, short)


def _mel_distance_cells(a: np.ndarray, b: np.ndarray, samples: int, cell: int) -> np.ndarray:
    hop = metrics.HOP
    per_frame = metrics.mel_difference_db(a, b).mean(axis=0)  # (frames,): the whole-clip metric, per frame
    cells = -(-samples // cell)
    owner = np.minimum((np.arange(per_frame.size) * hop) // cell, cells - 1)  # cell holding each frame's centre
    total = np.bincount(owner, weights=per_frame, minlength=cells)
    count = np.bincount(owner, minlength=cells)
    return (total / np.maximum(count, 1)).astype(np.float32)


def log_mel_blocks(x, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """``analysis.log_mel(x)`` computed ``BLOCK_S`` at a time: each block gets half a window of real
    neighbours on both sides, and only frames whose window lies inside the padded block are kept,
    so the result equals the whole-clip pass."""
    x = metrics._mono(x)
    hop, half = metrics.HOP, metrics.N_FFT // 2
    frames = 1 + x.size // hop
    block = max(1, int(BLOCK_S * sample_rate) // hop) * hop
    if x.size <= block:
        return metrics.log_mel(x, sample_rate)
    parts = []
    for start in range(0, frames * hop, block):
        first, last = start // hop, min(frames, (start + block) // hop)  # frames [first, last)
        lo, hi = start - half, (last - 1) * hop + half  # samples those frames' windows cover
        piece = x[max(0, lo) : min(x.size, hi)]
        piece = np.pad(piece, (max(0, -lo), max(0, hi - x.size)))
        mel = metrics.log_mel(piece, sample_rate)  # frame j centred at lo + j * hop; frame first is j = half // hop
        skip = half // hop
        parts.append(mel[:, skip : skip + last - first])
    return np.concatenate(parts, axis=1)


def _seg_snr_cells(ref: np.ndarray, deg: np.ndarray, cell: int) -> np.ndarray:
    cells = -(-ref.size // cell)
    pad = cells * cell - ref.size
    r = np.pad(ref, (0, pad)).reshape(cells, cell).astype(np.float64)
    e = r - np.pad(deg, (0, pad)).reshape(cells, cell)
    signal, error = np.square(r).sum(axis=1), np.square(e).sum(axis=1)
    with np.errstate(divide="ignore"):
        snr = 10.0 * np.log10(signal / np.maximum(error, 1e-20))
    snr = np.clip(snr, *SEG_SNR_RANGE_DB)
    lengths = np.full(cells, cell, dtype=np.float64)
    lengths[-1] = cell - pad
    silent = np.sqrt(signal / lengths) < SILENT_CELL_RMS
    return np.where(silent, np.nan, snr).astype(np.float32)


def _window_cells(cell_s: float) -> int:
    """Cells in the worst-moment smoothing window."""
    return max(1, round(WORST_WINDOW_S / cell_s))


def _worst(distance: np.ndarray, snr: np.ndarray, silent: np.ndarray, cell_s: float) -> tuple[Moment, ...]:
    # "same" convolution returns max(cells, width) values: the caller keeps clips shorter than the window out
    width = _window_cells(cell_s)
    smooth = np.convolve(distance, np.ones(width) / width, mode="same")
    score = np.where(silent, -np.inf, smooth)
    gap = max(1, round(WORST_SEPARATION_S / cell_s))
    moments: list[Moment] = []
    for index in np.argsort(-score, kind="stable"):
        if not np.isfinite(score[index]) or len(moments) == WORST_COUNT:
            break
        t = float((index + 0.5) * cell_s)
        if all(abs(t - m.time_s) >= gap * cell_s for m in moments):
            window = snr[max(0, index - width // 2) : index + width // 2 + 1]  # the cells the smoothing saw
            low = float(np.nanmin(window)) if np.isfinite(window).any() else math.nan
            seg_snr = None if math.isnan(low) else round(low, 2)
            moments.append(Moment(round(t, 3), round(float(smooth[index]), 2), seg_snr))
    return tuple(moments)


def decimate(values: np.ndarray, step_s: float, max_points: int, reduce=np.nanmax) -> tuple[np.ndarray, np.ndarray]:
    """(times, values) with at most ``max_points`` points: groups of cells reduced by ``reduce``
    (nanmax keeps peaks, nanmin keeps dips); times are the groups' centres."""
    values = np.asarray(values, dtype=np.float32)
    factor = max(1, -(-values.size // max(1, max_points)))
    pad = (-values.size) % factor
    padded = np.pad(values, (0, pad), constant_values=np.nan).reshape(-1, factor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN groups (silence) stay NaN
        reduced = reduce(padded, axis=1)
    counts = np.full(padded.shape[0], factor)
    counts[-1] = factor - pad
    starts = np.arange(padded.shape[0]) * factor
    return (starts + counts / 2.0) * step_s, reduced


def _rounded(values: np.ndarray, digits: int) -> list:
    """JSON numbers; NaN becomes None (JSON has no NaN)."""
    return [None if not np.isfinite(v) else round(float(v), digits) for v in values]


def waveform_envelope(x, columns: int = PLOT_POINTS, sample_rate: int = SAMPLE_RATE) -> dict:
    """Min and max of the waveform (at ``sample_rate``) in ``columns`` equal groups: enough to draw it at that width."""
    audio = metrics._mono(x)
    factor = max(1, -(-audio.size // columns))
    pad = (-audio.size) % factor
    groups = np.pad(audio, (0, pad)).reshape(-1, factor)
    return {
        "seconds_per_column": factor / sample_rate,
        "min": _rounded(groups.min(axis=1), 3),
        "max": _rounded(groups.max(axis=1), 3),
    }
