"""Speaker similarity: does another version of a clip sound like the same speaker as the original?

The cosine of two speaker embeddings, the original's and the other version's, each made from the
same samples: the original's speech in at most ``max_windows`` windows of ``WINDOW_S`` seconds,
spread evenly over the clip (the verdict's MOS windows work the same way, core.judging.verdict).
Which samples count as speech is decided once, on the original (resemblyzer's own voice-activity
settings), so every source is judged on exactly the same stretch of time: a codec's noise in a
pause neither adds nor removes audio from its comparison.

Bounded cost: whatever the clip's length, at most ``max_windows`` x ``WINDOW_S`` seconds (default
4 x 8 s = 32 s) are resampled, masked and embedded per source; bench/results/voice_bench.md has the
time and peak memory for 10 s, 64 s and 10-minute clips.

The embedding model is named with every number (``SpeakerScore.model``): resemblyzer's GE2E
encoder (weights inside its wheel, offline) is the default; a WavLM x-vector model, which is what
the Qwen3-TTS table's SIM column used, runs when its checkpoint is given (core.analysis.speaker_models).
The two answer on different scales and are never one column. docs/judging.md has the measured
values (same clip, other voices, anchors) behind the verdict's words.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

logger = logging.getLogger(__name__)

SIM_RATE = 16_000  # Hz, what both speaker models take
WINDOW_S = 8.0  # s of the clip per window
MAX_WINDOWS = 4  # windows per clip: at most 32 s are embedded at any length
MIN_SPEECH_S = 1.0  # s of speech (after the voice mask) below which no similarity is given
VAD_FRAME_MS = 30  # webrtcvad frame (resemblyzer.hparams.vad_window_length)
VAD_SMOOTH_FRAMES = 8  # moving average over frames (resemblyzer.hparams.vad_moving_average_width)
VAD_BRIDGE_FRAMES = 6  # pauses up to this many frames stay in (resemblyzer.hparams.vad_max_silence_length)
VAD_MODE = 3  # webrtcvad's most selective mode, as resemblyzer uses it


class SpeakerEncoder(Protocol):
    """A speaker embedding model: ``label`` names it wherever its numbers appear."""

    id: str  # "ge2e" or "wavlm": the metric it feeds
    label: str  # e.g. "GE2E (resemblyzer 0.1.4)"

    def embed(self, speech: np.ndarray) -> np.ndarray:
        """One unit-length embedding of ``speech`` (float32 mono at SIM_RATE)."""
        ...


@dataclass(frozen=True)
class SpeakerScore:
    model: str  # the encoder's label: which model made these numbers
    metric: str  # "ge2e" or "wavlm"
    values: dict[str, float | None]  # source id -> cosine similarity with the original (None: not available)
    windows: tuple[tuple[float, float], ...]  # (start s, end s) of the windows, in the clip
    speech_s: float  # seconds of the original's speech that were compared
    note: str = ""  # why values are None, or which part of the clip was used
    seconds: float = 0.0  # time spent
    notes: dict[str, str] = field(default_factory=dict)  # source id -> why that one is None

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "metric": self.metric,
            "values": dict(self.values),
            "windows": [list(w) for w in self.windows],
            "speech_s": self.speech_s,
            "note": self.note,
            "notes": dict(self.notes),
            "seconds": self.seconds,
        }


def window_spans(samples: int, rate: int, max_windows: int = MAX_WINDOWS, window_s: float = WINDOW_S):
    """(start, end) samples of the windows of a clip of ``samples`` samples at ``rate``: the whole
    clip when it fits in ``max_windows`` windows, else ``max_windows`` windows spread evenly from its
    start to its end."""
    if max_windows < 1:
        raise ValueError("max_windows must be at least 1")
    width = int(round(window_s * rate))
    if samples <= width * max_windows:
        return [(0, samples)]
    over = samples - width
    return [(int(round(c * over)), int(round(c * over)) + width) for c in np.linspace(0.0, 1.0, max_windows)]


def voiced_mask(speech: np.ndarray, rate: int = SIM_RATE) -> np.ndarray:
    """A boolean per sample of ``speech`` (float mono at ``rate``, 8/16/32/48 kHz): True where
    webrtcvad hears speech, smoothed and with short pauses bridged as resemblyzer's
    ``trim_long_silences`` does (the same settings), but kept as a mask so it can be laid over
    another version of the clip."""
    import webrtcvad
    from scipy.ndimage import binary_dilation

    frame = VAD_FRAME_MS * rate // 1000
    count = speech.size // frame
    mask = np.zeros(speech.size, dtype=bool)
    if count == 0:
        return mask
    pcm = (np.clip(speech[: count * frame], -1.0, 1.0) * 32767).round().astype("<i2").tobytes()
    vad = webrtcvad.Vad(VAD_MODE)
    flags = np.array([vad.is_speech(pcm[i * frame * 2 : (i + 1) * frame * 2], rate) for i in range(count)], float)
    padded = np.concatenate([np.zeros((VAD_SMOOTH_FRAMES - 1) // 2), flags, np.zeros(VAD_SMOOTH_FRAMES // 2)])
    smooth = np.convolve(padded, np.ones(VAD_SMOOTH_FRAMES) / VAD_SMOOTH_FRAMES, mode="valid")
    voiced = np.round(smooth).astype(bool)
    bridged = binary_dilation(voiced, np.ones(VAD_BRIDGE_FRAMES + 1))
    mask[: count * frame] = np.repeat(bridged, frame)
    return mask


def _at_sim_rate(x: np.ndarray, rate: int) -> np.ndarray:
    import soxr

    x = np.asarray(x, dtype=np.float32).reshape(-1)
    return x if rate == SIM_RATE else soxr.resample(x, rate, SIM_RATE).astype(np.float32)


def cut_windows(x: np.ndarray, spans, rate: int) -> list[np.ndarray]:
    """The windows of ``x`` (at ``rate``) at SIM_RATE, each resampled on its own (bounded cost)."""
    return [_at_sim_rate(x[start:end], rate) for start, end in spans]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denominator if denominator > 0 else math.nan


def similarity(
    original,
    others: Mapping[str, object],
    sample_rate: int,
    encoder: SpeakerEncoder,
    max_windows: int = MAX_WINDOWS,
) -> SpeakerScore:
    """Cosine similarity of ``encoder``'s embedding of each of ``others`` (source id -> samples,
    aligned with the original) with the original's, all on the original's speech in the same
    windows. A source shorter than the original is compared on what it has; one that cannot be
    embedded gets None and a note (the others still get their numbers)."""
    import time

    started = time.perf_counter()
    x = np.asarray(original, dtype=np.float32).reshape(-1)
    spans = window_spans(x.size, sample_rate, max_windows)
    windows = tuple((round(s / sample_rate, 2), round(min(e, x.size) / sample_rate, 2)) for s, e in spans)
    pieces = cut_windows(x, spans, sample_rate)
    masks = [voiced_mask(p) for p in pieces]
    speech_s = sum(int(m.sum()) for m in masks) / SIM_RATE
    scope = "" if len(spans) == 1 else f"on {len(spans)} windows of {WINDOW_S:g} s spread over the clip, for speed"

    def empty(note: str) -> SpeakerScore:
        values: dict[str, float | None] = dict.fromkeys(others)
        return SpeakerScore(encoder.label, encoder.id, values, windows, speech_s, note, time.perf_counter() - started)

    if not np.isfinite(x).all():
        return empty("the original holds NaN or infinite samples")
    if speech_s < MIN_SPEECH_S:
        return empty(
            f"speaker similarity needs at least {MIN_SPEECH_S:g} s of speech; the original has {speech_s:.2f} s"
        )
    reference = encoder.embed(np.concatenate([p[m] for p, m in zip(pieces, masks, strict=True)]))
    values: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for source_id, samples in others.items():
        y = np.asarray(samples, dtype=np.float32).reshape(-1)
        try:
            if not np.isfinite(y).all():
                raise ValueError("it holds NaN or infinite samples")
            parts = cut_windows(y, spans, sample_rate)
            kept = [p[m[: p.size]] for p, m in zip(parts, masks, strict=True)]  # the original's speech samples
            speech = np.concatenate(kept) if kept else np.zeros(0, np.float32)
            if speech.size < MIN_SPEECH_S * SIM_RATE:
                raise ValueError(f"it is too short: {speech.size / SIM_RATE:.2f} s under the original's speech")
            values[source_id] = _cosine(reference, encoder.embed(speech))
        except Exception as e:  # noqa: BLE001 - one source that cannot be embedded leaves the others
            logger.warning("speaker similarity of %s left out: %s", source_id, e)
            values[source_id], notes[source_id] = None, f"not available: {e}"
        value = values[source_id]
        if value is not None and not math.isfinite(value):
            values[source_id], notes[source_id] = None, "not available: the embedding was zero"
    return SpeakerScore(
        encoder.label, encoder.id, values, windows, speech_s, scope, time.perf_counter() - started, notes
    )


def embedding(samples, sample_rate: int, encoder: SpeakerEncoder, max_windows: int = MAX_WINDOWS) -> np.ndarray | None:
    """``encoder``'s embedding of a clip on its own speech (its own windows and voice mask), for
    comparing clips that are not versions of one another (two speakers, two utterances, the
    dataset audit's speakers); None when it holds under MIN_SPEECH_S of speech."""
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    pieces = cut_windows(x, window_spans(x.size, sample_rate, max_windows), sample_rate)
    speech = np.concatenate([p[voiced_mask(p)] for p in pieces])
    return encoder.embed(speech) if speech.size >= MIN_SPEECH_S * SIM_RATE else None


def cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    """The cosine of two embeddings (NaN when one is zero or missing: :func:`embedding` gave None)."""
    if a is None or b is None:
        return math.nan
    return _cosine(np.asarray(a, np.float64), np.asarray(b, np.float64))


_REFERENCES: OrderedDict[tuple, tuple] = OrderedDict()  # (model, rate, windows' bytes digest) -> (masks, embedding)
_REFERENCES_KEPT = 8  # originals whose embedding is kept (a round trip compares one with every source)
_REFERENCES_LOCK = threading.Lock()


def pair(original, other, sample_rate: int, encoder: SpeakerEncoder) -> tuple[float | None, str]:
    """(similarity of ``other`` with ``original``, note) as the metric catalogue asks for it: the
    original's embedding is made once and kept for the next source of the same clip."""
    x = np.asarray(original, dtype=np.float32).reshape(-1)
    spans = window_spans(x.size, sample_rate)
    digest = hashlib.blake2b(digest_size=16)
    for start, end in spans:
        digest.update(x[start:end].tobytes())
    key = (encoder.label, sample_rate, x.size, digest.hexdigest())
    with _REFERENCES_LOCK:
        kept = _REFERENCES.get(key)
    if kept is None:
        pieces = cut_windows(x, spans, sample_rate)
        masks = [voiced_mask(p) for p in pieces]
        speech_s = sum(int(m.sum()) for m in masks) / SIM_RATE
        if speech_s < MIN_SPEECH_S:
            return (
                None,
                f"speaker similarity needs at least {MIN_SPEECH_S:g} s of speech; the original has {speech_s:.2f} s",
            )
        kept = (masks, encoder.embed(np.concatenate([p[m] for p, m in zip(pieces, masks, strict=True)])))
        with _REFERENCES_LOCK:
            _REFERENCES[key] = kept
            while len(_REFERENCES) > _REFERENCES_KEPT:
                _REFERENCES.popitem(last=False)
    masks, reference = kept
    y = np.asarray(other, dtype=np.float32).reshape(-1)
    parts = cut_windows(y, spans, sample_rate)
    speech = np.concatenate([p[m[: p.size]] for p, m in zip(parts, masks, strict=True)])
    if speech.size < MIN_SPEECH_S * SIM_RATE:
        return None, f"too short: {speech.size / SIM_RATE:.2f} s under the original's speech"
    value = _cosine(reference, encoder.embed(speech))
    scope = "" if len(spans) == 1 else f"on {len(spans)} windows of {WINDOW_S:g} s spread over the clip, for speed"
    if not math.isfinite(value):
        return None, "not available: the embedding was zero"
    return value, f"{encoder.label}; {scope}" if scope else encoder.label


def ge2e_metric(row, clip):
    """The SIM-GE2E row of the metric catalogue (``compare`` calls it with the row and both whole,
    aligned signals): :func:`pair` with resemblyzer's GE2E, as a ``metrics.Metric``."""
    from core.analysis.metrics import metric
    from core.analysis.speaker_models import GE2E, encoder

    return metric(row, *pair(clip.ref, clip.deg, clip.sample_rate, encoder(GE2E, clip.judges.device)))


def wavlm_metric(row, clip):
    """The SIM-WavLM row: :func:`pair` with the WavLM x-vector checkpoint the caller chose
    (``clip.judges.speaker``: a directory or a hub id, loaded by the codec's loading path)."""
    from core.analysis.metrics import metric
    from core.analysis.speaker_models import encoder

    return metric(row, *pair(clip.ref, clip.deg, clip.sample_rate, encoder(clip.judges.speaker, clip.judges.device)))
