"""The lab's analysis of a clip (log-mel blocks and integrated loudness), remembered by content:
the timeline's original and reconstruction are met again by the ladder (its original, and its
k = 16 level, which is the reconstruction sample for sample). Used by ``webui.jobs.lab``."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numpy as np

from core.analysis import timeline
from core.audio import loudness
from core.codec import SAMPLE_RATE


@dataclass(frozen=True)
class Analysed:
    mel: np.ndarray  # timeline.log_mel_blocks of the file's samples
    lufs: float | None  # integrated loudness


_CACHE: dict[tuple, Analysed] = {}  # (samples, digest) -> analysis: the timeline's original and reconstruction,
# met again by the ladder (its original, and its k = 16 level, which is the reconstruction sample for sample)
CACHE_ENTRIES = 8  # analyses remembered: a timeline's two and a default ladder's five fit
CACHE_MAX_SAMPLES = 5 * 60 * SAMPLE_RATE  # longer clips are not cached (a 5-min mel is 9 MiB)
_CACHE_LOCK = threading.Lock()  # the lab's CPU events and the ladder run in different workers


def analyse(samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> Analysed:
    """Log-mel and loudness of ``samples`` at ``sample_rate``, remembered by their content (a digest costs
    ~5 ms for 30 s, an analysis ~20 times that)."""
    digest = hashlib.blake2b(np.ascontiguousarray(samples).tobytes(), digest_size=16).hexdigest()
    key = (samples.size, digest, sample_rate)
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is None:
        found = Analysed(timeline.log_mel_blocks(samples, sample_rate), loudness.integrated_lufs(samples, sample_rate))
        if samples.size <= CACHE_MAX_SAMPLES:
            with _CACHE_LOCK:
                while len(_CACHE) >= CACHE_ENTRIES:
                    _CACHE.pop(next(iter(_CACHE)))
                _CACHE[key] = found
    return found


def forget() -> None:
    """Forget every remembered analysis (benchmarks time each run as a new clip)."""
    with _CACHE_LOCK:
        _CACHE.clear()
