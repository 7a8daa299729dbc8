"""A job's pre-flight, before any model work: the memory free now, the largest chunk plan whose estimate
fits it (``core.model.planner.choose``) or a refusal in words, a length given as seconds, samples or frames
turned into samples, and the refusal of clips without samples.

Pure over what it is given (the model's dims, the settings, the bytes a load beside the model is reading):
the engine calls it under or outside its lock as each call needs.
"""

from __future__ import annotations

import logging

import numpy as np

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.errors import AudioInputError, OutOfMemory
from core.model import memory, planner
from core.model.planner import ChunkPlan, MemoryEstimate
from core.settings import Settings

logger = logging.getLogger(__name__)


def plan(
    dims: planner.ModelDims, settings: Settings, operation: str, lengths: list[int], loading_bytes: float = 0.0
) -> tuple[ChunkPlan | None, MemoryEstimate]:
    """The largest plan whose estimate fits the memory free now, and that estimate; ``loading_bytes``
    (weights a second checkpoint is reading now) are not free."""
    host_free = memory.free_bytes("cpu")
    free = memory.free_bytes(settings.device) if settings.is_cuda else host_free
    free = max(0.0, free - loading_bytes)
    if not settings.is_cuda:
        host_free = free
    return planner.choose(dims, settings, operation, lengths, free, host_free)


def plan_or_refuse(
    dims: planner.ModelDims, settings: Settings, operation: str, lengths: list[int], loading_bytes: float = 0.0
) -> ChunkPlan:
    """:func:`plan`'s plan, or ``OutOfMemory`` with its estimate's message when none fits."""
    chosen, estimate = plan(dims, settings, operation, lengths, loading_bytes)
    if chosen is None:
        logger.warning("refused: %s", estimate.message)
        raise OutOfMemory(estimate.message)
    return chosen


def input_samples(seconds: float | None = None, samples: int | None = None, frames: int | None = None) -> int:
    """A length given as ``seconds``, ``samples`` or code ``frames``, in input samples; ValueError unless positive."""
    if samples is None:
        samples = frames * SAMPLES_PER_FRAME if frames is not None else int(round((seconds or 0.0) * SAMPLE_RATE))
    if samples <= 0:
        raise ValueError("give a positive length: seconds, samples or frames")
    return int(samples)


def check_not_empty(arrays: list[np.ndarray]) -> None:
    """Refuse clips without samples (the model fails on them with a convolution-size error)."""
    for i, a in enumerate(arrays):
        if a.size == 0:
            which = "" if len(arrays) == 1 else f" (clip {i + 1} of {len(arrays)})"
            raise AudioInputError(
                f"There are no audio samples to encode{which}. Give a clip of at least one "
                f"frame ({SAMPLES_PER_FRAME} samples, 80 ms at 24 kHz)."
            )
