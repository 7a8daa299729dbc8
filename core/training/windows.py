"""Random fixed-length training segments aligned to code frames, drawn the same way on every process.

Step ``s`` draws ``batch_size × world_size`` segments from a generator seeded by (seed, s) alone, and
process ``r`` of ``world_size`` takes its share ``r``: one process with the doubled batch draws exactly
the segments two DDP processes share, and a resumed run draws what the uninterrupted one would have
(the data position is the step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.codec import SAMPLES_PER_FRAME


@dataclass(frozen=True)
class Segment:
    clip: str  # clip id
    start: int  # first code frame


def draw(
    train: list[tuple[str, int]], batch_size: int, frames: int, seed: int, step: int, rank: int = 0, world: int = 1
) -> list[Segment]:
    """This process's segments of step ``step``. ``train``: (clip id, frames) of the training clips,
    each at least ``frames`` long."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step)
    total = batch_size * world
    picks = torch.randint(len(train), (total,), generator=generator).tolist()
    starts = torch.rand(total, generator=generator, dtype=torch.float64).tolist()
    segments = []
    for pick, u in zip(picks, starts, strict=True):
        clip, length = train[pick]
        segments.append(Segment(clip, int(u * (length - frames + 1))))
    return segments[rank * batch_size : (rank + 1) * batch_size]


def load_batch(
    segments: list[Segment], frames: int, read, spf: int = SAMPLES_PER_FRAME
) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes (B, 16, frames) long, audio (B, 1, frames × 1920) float32) of the segments; ``read(clip)``
    gives a clip's (codes, audio) arrays; ``spf``: audio samples per frame (3840 for a 48 kHz decoder)."""
    codes, audio = [], []
    for segment in segments:
        clip_codes, clip_audio = read(segment.clip)
        codes.append(np.asarray(clip_codes[segment.start : segment.start + frames], dtype=np.int64).T)
        a, b = segment.start * spf, (segment.start + frames) * spf
        audio.append(np.asarray(clip_audio[a:b], dtype=np.float32))
    return torch.from_numpy(np.stack(codes)), torch.from_numpy(np.stack(audio))[:, None]
