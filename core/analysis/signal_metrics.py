"""The metrics of the catalogue measured against the original from the signals alone: PESQ
(wideband and narrowband), STOI, SI-SDR and the log-mel distance.

Each is ``function(row, clip)`` (``core.analysis.catalog.MetricRow.compute`` names it; ``clip`` is
``core.analysis.metrics.Clip``, which gives both signals at the row's rate and window) and answers a
``core.analysis.metrics.Metric``. PESQ and STOI (about 15 ms per second of audio on one core) read
the first ``METRIC_WINDOW_S`` seconds and say so in their note; SI-SDR and the log-mel distance
read the whole clip.
"""

from __future__ import annotations

import functools

import numpy as np

from core.analysis import catalog
from core.analysis.metrics import SILENCE_RMS, TOP_DB, Clip, Metric, log_mel, mel_difference_db, metric

MIN_PESQ_S = 0.25  # s, PESQ refuses shorter signals
MIN_STOI_S = 0.4  # s, STOI needs 30 frames of 25.6 ms at a 12.8 ms hop (after dropping silence)
SI_SDR_EPS = 1e-10  # keeps SI-SDR finite for identical signals
MEL_DISTANCE_NOTE = f"over {TOP_DB:.0f} dB below the loudest part of the original"  # the log-mel distance's scope


def _pesq(row: catalog.MetricRow, clip: Clip, mode: str) -> Metric:
    """PESQ, wideband (``mode`` "wb", ITU-T P.862.2) or narrowband ("nb", P.862)."""
    from pesq import NoUtterancesError, pesq

    ref, deg, rate = clip.signals(row)
    if ref.size < MIN_PESQ_S * rate:
        return metric(row, None, f"PESQ needs at least {MIN_PESQ_S} s of audio")
    if clip.silent:
        return metric(row, None, "the original is silent; PESQ needs speech")
    try:
        return metric(row, pesq(rate, ref, deg, mode), clip.scope)
    except NoUtterancesError as e:
        raise ValueError("PESQ found no speech in the original") from e


pesq_wb = functools.partial(_pesq, mode="wb")
pesq_nb = functools.partial(_pesq, mode="nb")


def stoi(row: catalog.MetricRow, clip: Clip) -> Metric:
    from pystoi import stoi as pystoi

    ref, deg, rate = clip.signals(row)
    if ref.size < MIN_STOI_S * rate:
        return metric(row, None, f"STOI needs at least {MIN_STOI_S} s of speech")
    if clip.silent:
        return metric(row, None, "the original is silent; STOI needs speech")
    value = pystoi(ref, deg, rate)
    if value == 1e-5:  # pystoi's answer when under 30 frames remain once silence is removed
        return metric(row, None, f"STOI needs at least {MIN_STOI_S} s of speech")
    return metric(row, value, clip.scope)


def si_sdr(row: catalog.MetricRow, clip: Clip) -> Metric:
    ref, deg, _ = clip.signals(row)
    ref, deg = ref.astype(np.float64), deg.astype(np.float64)
    ref, deg = ref - ref.mean(), deg - deg.mean()
    energy = ref @ ref
    if energy < SILENCE_RMS**2 * ref.size:
        return metric(row, None, "the original is silent; SI-SDR needs a signal")
    target = (deg @ ref) / energy * ref
    error = deg - target
    return metric(row, 10.0 * np.log10((target @ target + SI_SDR_EPS) / (error @ error + SI_SDR_EPS)))


def mel_distance(row: catalog.MetricRow, clip: Clip) -> Metric:
    """Mean absolute difference of the log-mel spectrograms (dB) over the whole clip."""
    ref, deg, rate = clip.signals(row)
    a, b = clip.mels or (log_mel(ref, rate), log_mel(deg, rate))
    frames = min(a.shape[1], b.shape[1])  # a caller's spectrograms may differ by a frame
    return metric(row, mel_difference_db(a[:, :frames], b[:, :frames]).mean(), MEL_DISTANCE_NOTE)
