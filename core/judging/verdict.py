"""A verdict in words: DistillMOS on both clips, combined with PESQ and STOI into one traffic light.

DistillMOS (``distillmos``, MIT) is a non-intrusive MOS predictor whose 17 MB of weights ship
inside its wheel, so it runs offline. It takes 16 kHz audio and answers 1..5. The model is
loaded once, on first use, onto the engine's device, and runs under its own lock.

Bounded cost: DistillMOS itself cuts a clip into 7.68 s windows one second apart and
runs them all in one batch: about 60 MB of RAM per second of audio (a 3-minute clip took 12.6 GiB;
30 minutes would need about 100 GB). Here at most ``max_windows`` of its windows run
(``Settings.mos_windows``, default 4, about 1 s each on 2 CPU cores): where the model's own
segmentation has more, that many are spread evenly from the first 7.68 s to the last (its own
``linspace`` with fewer hops). A clip up to 7.68 + (max_windows - 1) s gets exactly DistillMOS's
own answer; a longer one the mean over the chosen windows, named in the verdict (``windows``, in
seconds). Memory is then ``max_windows`` windows' (one batch, about 80 MB each) and time at most
``max_windows`` windows per clip, whatever the length.

The signals that vote and their bounds are rows of the metric catalogue (``core.analysis.catalog``,
which gives the reasoning; docs/judging.md the table). Each available signal gives a light; the
verdict is the worst of them, and it carries every signal's value and light (the page's card
renders those, and judges nothing itself).
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from core.analysis import catalog

logger = logging.getLogger(__name__)

MOS_RATE = 16_000  # Hz, DistillMOS's input rate
MIN_MOS_S = 0.5  # s; shorter clips are padded with silence by the model and say little
WINDOW_SAMPLES = 122_880  # DistillMOS's window at MOS_RATE (7.68 s; distillmos.sqa.SEQ_LEN)
MAX_HOP_SAMPLES = 16_000  # the model's longest step between windows (1 s; distillmos.sqa.MAX_HOP_LEN)

LEVELS = catalog.LIGHTS  # best to worst
WORDS = {"green": "close to the original", "amber": "noticeably degraded", "red": "badly degraded"}
RANDOM_CAVEAT = (
    "This checkpoint has random weights: its output is noise-like, so this verdict says nothing "
    "about the real codec's quality."
)


@dataclass(frozen=True)
class Verdict:
    level: str  # "green", "amber", "red", or "unknown" when no signal could be computed
    words: str  # the line a non-expert reads, e.g. "close to the original"
    reasons: list[str]  # one line per signal with its value and light
    mos_original: float | None  # DistillMOS of the original, 1..5
    mos_reconstruction: float | None  # DistillMOS of the reconstruction, 1..5
    caveat: str  # RANDOM_CAVEAT for random checkpoints, else ""
    seconds: float  # time spent on the MOS predictions
    windows: tuple[tuple[float, float], ...] = ()  # (start s, end s) of the DistillMOS windows, both clips
    values: dict[str, float | None] = field(default_factory=dict)  # signal id -> value (None: not available)
    lights: dict[str, str] = field(default_factory=dict)  # signal id -> its light, for those with a value

    @property
    def line(self) -> str:
        light = {"green": "🟢", "amber": "🟠", "red": "🔴"}.get(self.level, "⚪")
        return f"{light} {self.words[:1].upper()}{self.words[1:]}" + (f" — {self.caveat}" if self.caveat else "")

    def to_dict(self) -> dict:
        return asdict(self) | {"line": self.line, "windows": [list(w) for w in self.windows]}  # as JSON has it


THRESHOLDS: dict[str, tuple[float, float, bool]] = {  # signal id -> (green, red, higher is better): the catalogue's
    m.id: (float(m.green or 0.0), float(m.red or 0.0), m.higher_is_better) for m in catalog.VOTERS
}


def light(name: str, value: float) -> str:
    """The traffic light of one signal; a value that is not a finite number has none (NaN fell
    through every comparison to amber): ValueError."""
    if not math.isfinite(value):
        raise ValueError(f"{name} is {value}: not available, and not available is never a light")
    green, red, higher = THRESHOLDS[name]
    if higher:
        return "green" if value >= green else "red" if value < red else "amber"
    return "green" if value <= green else "red" if value > red else "amber"


def signal_values(
    metrics: dict[str, float | None], mos_original: float | None = None, mos_reconstruction: float | None = None
) -> dict[str, float | None]:
    """{signal id: value or None} for every voting signal, in the catalogue's order: a metric's value
    from ``metrics`` (by id), the MOS drop from the two predictions. NaN or infinity: None."""
    values: dict[str, float | None] = {}
    for m in catalog.VOTERS:
        if m.reads == catalog.DROP:
            value = None if mos_original is None or mos_reconstruction is None else mos_original - mos_reconstruction
        else:
            value = metrics.get(m.id)
        values[m.id] = value if value is not None and math.isfinite(value) else None
    return values


def signal_lights(values: dict[str, float | None]) -> dict[str, str]:
    """The light of each signal that has a value."""
    return {name: light(name, v) for name, v in values.items() if v is not None}


def combine(
    metrics: dict[str, float | None],
    mos_original: float | None,
    mos_reconstruction: float | None,
    random_weights: bool,
    seconds: float = 0.0,
    windows: tuple[tuple[float, float], ...] = (),
) -> Verdict:
    """The worst light among the voting signals (``catalog.VOTERS``: those that could be computed)."""
    values = signal_values(metrics, mos_original, mos_reconstruction)
    lights = signal_lights(values)
    reasons = [
        f"{name}: not available" if value is None else f"{name} {value:.2f}: {lights[name]}"
        for name, value in values.items()
    ]
    level = worst(lights)
    words = WORDS.get(level, "cannot judge (no metric could be computed; the clip may be silent or too short)")
    return Verdict(
        level,
        words,
        reasons,
        mos_original,
        mos_reconstruction,
        RANDOM_CAVEAT if random_weights else "",
        seconds,
        windows,
        values,
        lights,
    )


def worst(lights: dict[str, str]) -> str:
    """The verdict's rule: the worst of the lights, or "unknown" with none."""
    ranked = [light for light in lights.values() if light in LEVELS]
    return max(ranked, key=LEVELS.index) if ranked else "unknown"


def default_windows() -> int:
    """Windows per clip when a caller names none: the default of ``Settings.mos_windows``."""
    from core.settings import Settings

    return int(Settings.__dataclass_fields__["mos_windows"].default)  # type: ignore[arg-type]


def window_starts(samples: int, max_windows: int | None = None) -> list[int]:
    """Start samples (at MOS_RATE) of the DistillMOS windows of a clip of ``samples`` samples: the
    model's own (one second apart) when there are at most ``max_windows``, else ``max_windows``
    spread evenly from the first window to the last."""
    max_windows = default_windows() if max_windows is None else max_windows
    over = max(samples - WINDOW_SAMPLES, 0)
    hops = math.ceil(over / MAX_HOP_SAMPLES) + 1  # what DistillMOS's forward would run
    count = max(1, min(hops, int(max_windows)))
    return [int(c * over) for c in np.linspace(0, 1, count)]


class MosPredictor:
    """DistillMOS, loaded once on first use onto ``device``; one prediction at a time."""

    def __init__(self, device: str = "cpu"):
        self.device = device
        self._model: Any = None  # the DistillMOS module, once loaded
        self._lock = threading.Lock()

    def _load(self):
        import torch
        from distillmos import ConvTransformerSQAModel

        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the package prints where its weights came from
            model = ConvTransformerSQAModel()
        model.eval().to(torch.device(self.device))
        logger.info("DistillMOS loaded on %s in %.2f s", self.device, time.perf_counter() - started)
        return model

    def predict(self, samples, sample_rate: int, max_windows: int | None = None) -> float | None:
        """MOS (1..5) of mono float audio, the mean over at most ``max_windows`` windows
        (``window_starts``); None for clips shorter than MIN_MOS_S."""
        return self.predict_windows(samples, sample_rate, max_windows)[0]

    def predict_windows(
        self, samples, sample_rate: int, max_windows: int | None = None
    ) -> tuple[float | None, tuple[tuple[float, float], ...]]:
        """(MOS, the windows used as (start s, end s)); the windows run as one batch, as DistillMOS
        runs its own, so memory is ``max_windows`` windows' (about 80 MB each) at any length."""
        import soxr
        import torch

        audio = np.asarray(samples, dtype=np.float32).reshape(-1)
        if audio.size < MIN_MOS_S * sample_rate or not np.isfinite(audio).all() or not np.abs(audio).max() > 0:
            return None, ()
        if sample_rate != MOS_RATE:  # the whole clip at once: 16 kHz of 30 min is 115 MB, and no seams
            audio = soxr.resample(audio, sample_rate, MOS_RATE).astype(np.float32)
        starts = window_starts(audio.size, max_windows)
        if audio.size < WINDOW_SAMPLES:  # the model pads a short clip itself
            audio = np.pad(audio, (0, WINDOW_SAMPLES - audio.size))
        batch = np.stack([audio[start : start + WINDOW_SAMPLES] for start in starts])  # max_windows x 7.68 s
        with self._lock:
            if self._model is None:
                self._model = self._load()
            with torch.inference_mode():
                scores = self._model(torch.from_numpy(batch).to(self.device)).reshape(-1).tolist()
        spans = tuple(
            (round(s / MOS_RATE, 2), round(min(s + WINDOW_SAMPLES, audio.size) / MOS_RATE, 2)) for s in starts
        )
        score = float(np.mean(scores))
        if not math.isfinite(score):  # audio far over full scale overflows the resampler: no MOS, never NaN
            logger.warning("DistillMOS came out %s; reported as not available", score)
            return None, ()
        return score, spans


_PREDICTORS: dict[str, MosPredictor] = {}  # one per device for the whole process (the model is 17 MB)
_PREDICTORS_LOCK = threading.Lock()


def predictor(device: str = "cpu") -> MosPredictor:
    """The process's MosPredictor for ``device`` (made on first call; loads nothing yet)."""
    with _PREDICTORS_LOCK:
        return _PREDICTORS.setdefault(device, MosPredictor(device))


def judge(
    original,
    reconstruction,
    metrics: dict[str, float | None],
    sample_rate: int,
    device: str = "cpu",
    random_weights: bool = False,
    max_windows: int | None = None,
) -> Verdict:
    """MOS of both clips (at most ``max_windows`` DistillMOS windows each), then :func:`combine`
    with the given metric values (by id)."""
    started = time.perf_counter()
    mos = predictor(device)
    mos_original, windows = _guarded(mos, original, sample_rate, max_windows)
    mos_reconstruction, _ = _guarded(mos, reconstruction, sample_rate, max_windows)
    return combine(metrics, mos_original, mos_reconstruction, random_weights, time.perf_counter() - started, windows)


def _guarded(mos: MosPredictor, samples, sample_rate: int, max_windows: int | None):
    try:
        return mos.predict_windows(samples, sample_rate, max_windows)
    except Exception as e:  # noqa: BLE001 - a MOS that cannot be had must not sink the verdict: the other signals remain
        logger.warning("DistillMOS failed: %s: %s", type(e).__name__, e)
        return None, ()


def metric_values(metrics) -> dict[str, float | None]:
    """{name: value} from analysis.Metric objects or their dicts (as jobs.measure returns them)."""
    out = {}
    for m in metrics or []:
        name, value = (m["name"], m["value"]) if isinstance(m, dict) else (m.name, m.value)
        out[name] = value
    return out
