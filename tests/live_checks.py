"""What the live tests share (CPU and GPU): push a clip through a live session in blocks, and the
block sizes the issue names. A module, not a fixture, so tests/core and tests/gpu import the same one."""

from __future__ import annotations

import numpy as np

from core.codec import SAMPLE_RATE


def block_sizes(clip_samples: int, seed: int = 0) -> dict[str, list[int]]:
    """Named block-size schedules that cover ``clip_samples``: 1 sample, 1919, 1920, 7 s, random."""
    rng = np.random.default_rng(seed)
    random: list[int] = []
    while sum(random) < clip_samples:
        random.append(int(rng.integers(1, 9000)))
    return {
        "1 sample": [1] * clip_samples,
        "1919": [1919] * (clip_samples // 1919 + 1),
        "1920": [1920] * (clip_samples // 1920 + 1),
        "7 s": [7 * SAMPLE_RATE],
        "random": random,
    }


def stream(engine, x: np.ndarray, sizes: list[int], sample_rate: int = SAMPLE_RATE):
    """Push ``x`` (samples, or (samples, channels)) through a live session in blocks of ``sizes``;
    return the session's LiveResult and the audio the blocks gave back as they went."""
    channels = 1 if x.ndim == 1 else x.shape[1]
    session = engine.live.open(sample_rate, channels, paced=False)
    pieces, start = [], 0
    with session:
        for size in sizes:
            if start >= x.shape[0]:
                break
            pieces.append(session.push(x[start : start + size]).samples)
            start += size
        result = session.finish()
    return result, np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
