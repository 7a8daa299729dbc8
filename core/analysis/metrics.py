"""Spectrograms, the metrics' common ground (``compare``) and figures for comparing an original with
its reconstruction.

Figures are built on ``matplotlib.figure.Figure`` without pyplot, so they can be made from
several threads at once and never open a window. Every function takes mono float audio
(numpy array or anything ``np.asarray`` accepts).

Metrics (``compare``: the rows of ``core.analysis.catalog``, which says what each reads and which
function computes it: core.analysis.signal_metrics, core.analysis.speaker, core.analysis.dwer) are
computed independently: one that cannot be computed (silence, too short, ...) comes back with
``value=None`` and a note saying why. A caller asks for the rows it shows by id (``metrics=``) and
names the judging models (``judges=``, core.analysis.judges): a row it does not ask for costs nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soxr
import torch
from matplotlib.figure import Figure

from core.analysis import catalog
from core.analysis.figure_text import FIGURE_WORDS
from core.analysis.judges import DEFAULT_JUDGES, Judges
from core.codec import SAMPLE_RATE, ceil_div

logger = logging.getLogger(__name__)

N_FFT = 1024  # samples per STFT window (43 ms at 24 kHz)
HOP = 256  # samples between STFT frames (10.7 ms at 24 kHz)
N_MELS = 80  # mel bands
POWER_FLOOR = 1e-10  # floor of the mel power before the log: -100 dB
TOP_DB = 80.0  # dB below the loudest cell that spectrograms and the log-mel distance show
DIFF_RANGE_DB = 20.0  # the difference panel spans -20..+20 dB
METRIC_WINDOW_S = catalog.METRIC_WINDOW_S  # s of audio PESQ and STOI look at (speed: ~15 ms per second of audio)
SILENCE_RMS = 1e-4  # RMS below this (-80 dBFS) counts as silence
FIG_WIDTH_IN = 10.0  # inches; at FIG_DPI gives a 1000-pixel-wide PNG
FIG_DPI = 100  # dots per inch of saved figures
PNG_COMPRESS_LEVEL = 1  # zlib level: 1 halves the save time of level 6 for ~30% more bytes
MAX_IMAGE_COLUMNS = 1200  # spectrogram columns drawn; longer clips are max-pooled down to this


@dataclass(frozen=True)
class Metric:
    name: str  # its id in the metric catalogue (core.analysis.catalog), e.g. PESQ-WB
    value: float | None  # the score; None when it could not be computed
    meaning: str  # one line saying what it measures and its range
    better: str  # "higher" or "lower"
    note: str = ""  # why value is None, or what part of the audio it covers
    unit: str = ""  # "dB" or "" (dimensionless)
    rate_hz: int | None = None  # the rate it measured at (``MetricRow.measured_at``: 16 kHz PESQ, 48 kHz SI-SDR, ...)


# --------------------------------------------------------------------------- spectrograms


def log_mel(x, sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT, hop: int = HOP, n_mels: int = N_MELS) -> np.ndarray:
    """Log-mel power spectrogram in dB, shape (n_mels, 1 + len(x) // hop); frame i is
    centred at i * hop / sample_rate seconds."""
    audio = torch.from_numpy(_mono(x))
    spec = torch.stft(
        audio,
        n_fft,
        hop_length=hop,
        window=torch.hann_window(n_fft),
        center=True,
        pad_mode="constant",
        return_complex=True,
    )
    power = spec.real.square() + spec.imag.square()  # (n_fft // 2 + 1, frames)
    fbank = torch.from_numpy(_mel_filterbank(sample_rate, n_fft, n_mels))
    mel = fbank @ power
    return (10.0 * torch.log10(mel.clamp_min(POWER_FLOOR))).numpy()


@functools.lru_cache(maxsize=8)
def _mel_filterbank(sample_rate: int, n_fft: int, n_mels: int) -> np.ndarray:
    """Triangular HTK-mel filters from 0 Hz to Nyquist, shape (n_mels, n_fft // 2 + 1), unnormalised:
    torchaudio's ``melscale_fbanks`` (tests/core/analysis/test_metrics.py pins its numbers)."""
    return _fbanks(n_fft // 2 + 1, sample_rate, n_mels)


def _fbanks(n_freqs: int, sample_rate: int, n_mels: int) -> np.ndarray:
    """The filters at ``n_freqs`` frequencies evenly spaced from 0 Hz to Nyquist: (n_mels, n_freqs)."""
    from torchaudio.functional import melscale_fbanks

    fbank = melscale_fbanks(n_freqs, 0.0, sample_rate / 2, n_mels, sample_rate, norm=None, mel_scale="htk")
    return np.ascontiguousarray(fbank.numpy().T, dtype=np.float32)


def _mono(x, what: str = "the audio") -> np.ndarray:
    """``x`` as a 1-D float32 array; (n, 1) and (1, n) are accepted. ``what`` names it in errors."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    audio = np.asarray(x, dtype=np.float32)
    if audio.ndim == 2 and 1 in audio.shape:
        audio = audio.reshape(-1)
    if audio.ndim != 1:
        raise ValueError(f"expected mono audio (1-D), got shape {audio.shape}; mix it down first")
    if audio.size == 0:
        raise ValueError("the audio is empty")
    if not np.isfinite(audio).all():
        raise ValueError(f"{what} contains NaN or infinite samples")
    return np.ascontiguousarray(audio)


# --------------------------------------------------------------------------- metrics


def compare(
    reference,
    degraded,
    sample_rate: int = SAMPLE_RATE,
    max_seconds: float | None = METRIC_WINDOW_S,
    metrics: Iterable[str] | None = None,
    judges: Judges = DEFAULT_JUDGES,
) -> list[Metric]:
    """The metrics of ``degraded`` against ``reference``, trimmed to the shorter of the two: the rows
    of ``catalog.COMPARED`` that ``judges`` computes (SIM-GE2E or SIM-WavLM, ...), or only those of
    ``metrics`` (catalogue ids; KeyError for an unknown one). Those that read the first seconds look
    at ``max_seconds`` (None: everything)."""
    rows = judges.rows(catalog.COMPARED if metrics is None else [catalog.metric(i) for i in metrics])
    ref, deg = _mono(reference, "the original"), _mono(degraded, "the reconstruction")
    if ref.size != deg.size:
        logger.debug("comparing %d against %d samples: trimming to the shorter", ref.size, deg.size)
    n = min(ref.size, deg.size)
    ref, deg = ref[:n], deg[:n]
    window = n if max_seconds is None else min(n, int(max_seconds * sample_rate))
    silent, scope = _rms(ref[:window]) < SILENCE_RMS, _scope_note(window, n, sample_rate)
    clip = Clip(ref, deg, sample_rate, window, silent, scope, judges=judges)
    return [_at_rate(_guarded(row.function(), row, clip), row, sample_rate) for row in rows]


@dataclass
class Clip:
    """The two signals a metric reads (``compute(row, clip)``), each window resampled once per rate."""

    ref: np.ndarray
    deg: np.ndarray
    sample_rate: int
    window: int  # samples of the first-seconds window
    silent: bool  # the original's window is silence
    scope: str  # the note of a metric that read only the window
    mels: tuple[np.ndarray, np.ndarray] | None = None  # both log-mel spectrograms, when a caller has them
    judges: Judges = DEFAULT_JUDGES  # the speaker model and the ASR the caller chose
    _at: dict = field(default_factory=dict)  # (rate, samples) -> both signals resampled

    def signals(self, row: catalog.MetricRow) -> tuple[np.ndarray, np.ndarray, int]:
        """(reference, degraded, rate) as ``row`` reads them."""
        if row.window == catalog.WHOLE and row.rate is None:  # as they are: no copies of a long clip
            return self.ref, self.deg, self.sample_rate
        rate = row.rate or self.sample_rate
        end = self.window if row.window == catalog.FIRST else self.ref.size
        if (rate, end) not in self._at:
            self._at[rate, end] = tuple(_resample(x[:end], self.sample_rate, rate) for x in (self.ref, self.deg))
        return (*self._at[rate, end], rate)


def quick_compare(
    reference, degraded, mels: tuple[np.ndarray, np.ndarray] | None = None, sample_rate: int = SAMPLE_RATE
) -> list[Metric]:
    """The fast metrics only (``catalog`` rows with ``quick``: SI-SDR, log-mel distance; no PESQ or
    STOI), for many versions of one clip. ``mels``: both log-mel spectrograms when the caller has them."""
    ref, deg = _mono(reference), _mono(degraded)
    n = min(ref.size, deg.size)
    clip = Clip(ref[:n], deg[:n], sample_rate, n, False, "", mels)
    return [_at_rate(_guarded(row.function(), row, clip), row, sample_rate) for row in catalog.COMPARED if row.quick]


def _at_rate(measured: Metric, row: catalog.MetricRow, comparison_hz: int) -> Metric:
    """``measured`` stating the rate its row measured at."""
    return dataclasses.replace(measured, rate_hz=row.measured_at(comparison_hz))


def metric(row: catalog.MetricRow, value: float | None, note: str = "") -> Metric:
    """``row``'s Metric of ``value`` (None: not available, ``note`` says why); NaN or infinity is None."""
    if value is not None and not math.isfinite(float(value)):  # NaN is "not available", never a score
        value, note = None, "not available: the result is not a finite number (the audio may be far over full scale)"
    return Metric(row.id, None if value is None else float(value), row.meaning, row.better, note, row.unit)


def _guarded(compute, row: catalog.MetricRow, clip: Clip) -> Metric:
    """Run one metric; any failure becomes value None with the error as the note."""
    try:
        return compute(row, clip)
    except Exception as e:  # pesq and pystoi raise assorted errors on odd input
        logger.warning("%s could not be computed: %s", row.id, e)
        return metric(row, None, f"could not be computed: {type(e).__name__}: {e}")


def mel_difference_db(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| per cell of two log-mel spectrograms (dB), both floored TOP_DB below a's loudest
    cell: differences far below the loudest sound do not count. Its mean is the log-mel distance."""
    floor = a.max() - TOP_DB
    return np.abs(np.maximum(a, floor) - np.maximum(b, floor))


def _scope_note(window: int, n: int, sample_rate: int) -> str:
    if window == n:
        return ""
    return f"on the first {window / sample_rate:.1f} s of {n / sample_rate:.1f} s, for speed"


def _resample(x: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    if rate_in == rate_out:
        return x.astype(np.float64)
    return soxr.resample(x, rate_in, rate_out).astype(np.float64)


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


# --------------------------------------------------------------------------- figures


def spectrogram_figure(reference, reconstruction, sample_rate: int = SAMPLE_RATE, words: dict | None = None) -> Figure:
    """Original, reconstruction and their difference as log-mel spectrograms over the same
    time axis (trimmed to the shorter clip). The first two share one colour scale. ``words``:
    FIGURE_WORDS in the reader's language."""
    ref, rec = _mono(reference), _mono(reconstruction)
    n = min(ref.size, rec.size)
    a, b = log_mel(ref[:n], sample_rate), log_mel(rec[:n], sample_rate)
    vmax = float(max(a.max(), b.max()))
    vmin = vmax - TOP_DB
    duration = n / sample_rate
    fig, axes, caxes = _panels(3, panel_height_in=2.2)
    w = FIGURE_WORDS | (words or {})
    panels = [
        (a, w["original"], "magma", vmin, vmax, "dB"),
        (b, w["reconstruction"], "magma", vmin, vmax, "dB"),
        (
            np.maximum(b, vmin) - np.maximum(a, vmin),
            w["difference"],
            "RdBu_r",
            -DIFF_RANGE_DB,
            DIFF_RANGE_DB,
            "dB",
        ),
    ]
    for ax, cax, (mel, title, cmap, low, high, label) in zip(axes, caxes, panels, strict=True):
        _draw_mel(fig, ax, cax, mel, sample_rate, duration, title, cmap, low, high, label, w["frequency"])
    axes[-1].set_xlabel(w["time"])
    return fig


def single_spectrogram_figure(
    x, sample_rate: int = SAMPLE_RATE, title: str | None = None, words: dict | None = None
) -> Figure:
    """One log-mel spectrogram, TOP_DB deep (``words``: FIGURE_WORDS in another language)."""
    w = FIGURE_WORDS | (words or {})
    title = title or w["spectrogram"]
    audio = _mono(x)
    mel = log_mel(audio, sample_rate)
    fig, (ax,), (cax,) = _panels(1, panel_height_in=2.4)
    top = float(mel.max())
    _draw_mel(
        fig,
        ax,
        cax,
        mel,
        sample_rate,
        audio.size / sample_rate,
        title,
        "magma",
        top - TOP_DB,
        top,
        "dB",
        w["frequency"],
    )
    ax.set_xlabel(w["time"])
    return fig


def _draw_mel(fig, ax, cax, mel, sample_rate, duration, title, cmap, vmin, vmax, label, frequency: str) -> None:
    frames = mel.shape[1]
    image = _pool_columns(mel, MAX_IMAGE_COLUMNS)
    extent = (0.0, frames * HOP / sample_rate, 0.0, mel.shape[0])
    im = ax.imshow(
        image,
        origin="lower",
        aspect="auto",
        extent=extent,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        interpolation="nearest",
        rasterized=True,
    )
    ax.set_xlim(0.0, duration)
    ax.set_title(title)
    ax.set_ylabel(frequency)
    ticks, labels = _khz_ticks(sample_rate, mel.shape[0])
    ax.set_yticks(ticks, labels)
    fig.colorbar(im, cax=cax, label=label)


def _panels(rows: int, panel_height_in: float) -> tuple[Figure, list, list]:
    """A figure of ``rows`` stacked plots sharing the time axis, each with a colourbar on
    its right. Margins are fixed in inches: a layout engine would double the drawing time."""
    top_in, bottom_in, gap_in = 0.35, 0.55, 0.45  # title room, x-label room, between panels
    height = top_in + bottom_in + rows * panel_height_in + (rows - 1) * gap_in
    fig = Figure(figsize=(FIG_WIDTH_IN, height), dpi=FIG_DPI)
    grid = fig.add_gridspec(
        rows,
        2,
        width_ratios=(70, 1),
        left=0.07,
        right=0.93,
        bottom=bottom_in / height,
        top=1 - top_in / height,
        hspace=gap_in / panel_height_in,
        wspace=0.015,
    )
    axes: list = []
    caxes: list = []
    for row in range(rows):
        axes.append(fig.add_subplot(grid[row, 0], sharex=axes[0] if axes else None))
        caxes.append(fig.add_subplot(grid[row, 1]))
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)
    return fig, axes, caxes


def _pool_columns(mel: np.ndarray, max_columns: int) -> np.ndarray:
    """Max-pool time so that at most ``max_columns`` remain (keeps short events visible);
    the pooled image still spans the same time range."""
    factor = ceil_div(mel.shape[1], max_columns)
    if factor <= 1:
        return mel
    pad = (-mel.shape[1]) % factor
    padded = np.pad(mel, ((0, 0), (0, pad)), mode="edge")
    return padded.reshape(mel.shape[0], -1, factor).max(axis=2)


def _khz_ticks(sample_rate: int, n_mels: int) -> tuple[list[float], list[str]]:
    """Positions on the mel-band axis (band i spans i..i+1) of round frequencies: where the
    filters that respond to the frequency sit, weighted by their response."""
    nyquist = sample_rate // 2
    step_hz = math.gcd(500, nyquist)  # every tick frequency falls on the evaluation grid
    with warnings.catch_warnings():  # the coarse grid leaves low bands empty; only these columns are read
        warnings.simplefilter("ignore", UserWarning)
        fbank = _fbanks(nyquist // step_hz + 1, sample_rate, n_mels)
    bands = np.arange(n_mels) + 0.5  # band centres on the axis
    ticks, labels = [], []
    for khz in (0.5, 1, 2, 4, 8, 16):
        if khz * 1000 < sample_rate / 2:
            response = fbank[:, int(khz * 1000) // step_hz]
            ticks.append(float(response @ bands / response.sum()))
            labels.append(f"{khz:g}")
    return ticks, labels


def mel_png(mel: np.ndarray, path, vmin: float, vmax: float, width: int = 1000) -> Path:
    """A log-mel spectrogram as a bare PNG image (no axes), ``width`` columns at most: a thumbnail
    in milliseconds where a matplotlib figure takes a tenth of a second."""
    from matplotlib import colormaps
    from PIL import Image

    image = _pool_columns(mel, width)[::-1]  # low frequencies at the bottom
    scaled = np.clip((image - vmin) / max(vmax - vmin, 1e-9), 0.0, 1.0)
    rgb = (colormaps["magma"](scaled)[..., :3] * 255).astype(np.uint8)
    path = Path(path)
    with open(path, "xb") as f:
        Image.fromarray(rgb).resize((max(width, 1), 2 * mel.shape[0]), Image.Resampling.NEAREST).save(
            f, format="PNG", compress_level=PNG_COMPRESS_LEVEL
        )
    return path


def figure_to_png(fig: Figure, path) -> Path:
    """Save ``fig`` as a PNG and release it."""
    path = Path(path)
    fig.savefig(path, format="png", dpi=FIG_DPI, pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    if "matplotlib.pyplot" in sys.modules:  # only pyplot keeps figures alive; ours are not in it
        sys.modules["matplotlib.pyplot"].close(fig)
    return path
