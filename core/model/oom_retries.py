"""A job's run under its chunk plan: out of memory, it runs again with half-size chunks.

``core.model.engine`` plans a job (``core.model.planner``), takes its lock and calls :func:`run`;
a chunk that runs out of device memory makes the whole job start again with the next smaller plan
(``planner.smaller``), down to ``min_chunk_s``, then :class:`core.errors.OutOfMemory` says what to
do. Any other error goes up unchanged. The engine stays ready either way.
"""

from __future__ import annotations

import logging
import time

import torch

from core.codec import SAMPLE_RATE
from core.errors import OutOfMemory
from core.model import calls as model_calls
from core.model import memory, planner
from core.model.planner import ChunkPlan
from core.settings import Settings

logger = logging.getLogger(__name__)


def run(settings: Settings, operation: str, lengths: list[int], plan: ChunkPlan, work):
    """``work(plan)`` with the backend flags of ``operation``, retried with smaller plans on out of
    memory; returns (result, seconds, peak MiB or None on the CPU). The caller holds the lock."""
    device = settings.device
    start = time.perf_counter()
    while True:
        memory.reset_peak(device)
        failed = None
        try:
            with torch.inference_mode(), model_calls.backend_flags(settings, operation):
                result = work(plan)
            if settings.is_cuda:
                torch.cuda.synchronize(torch.device(device))
        except Exception as e:
            if not memory.is_out_of_memory(e):
                raise
            failed = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if failed is None:
            return result, time.perf_counter() - start, memory.peak_mib(device)
        memory.release_cached(device)  # the failed attempt's tensors are gone with its frames
        smaller = planner.smaller(plan, settings)
        if smaller is None:
            raise OutOfMemory(_floor_message(settings, operation, lengths, plan, failed))
        logger.warning(
            "%s ran out of memory (%s); retrying with %.1f s windows and %d-frame chunks",
            operation,
            failed,
            smaller.encode_chunk_samples / SAMPLE_RATE,
            smaller.decode_chunk_frames,
        )
        plan = smaller


def _floor_message(settings: Settings, operation: str, lengths: list[int], plan: ChunkPlan, failed: str) -> str:
    seconds = max(lengths) / SAMPLE_RATE
    return (
        f"The {operation} of {seconds:.1f} s ran out of memory on {settings.device} even at the smallest "
        f"chunks ({plan.encode_chunk_samples / SAMPLE_RATE:.1f} s encode windows, "
        f"{plan.decode_chunk_frames} decode frames; floor min_chunk_s={settings.min_chunk_s:g}). "
        f"Free memory on the device (Clear VRAM, stop other GPU programs) or use a shorter clip. "
        f"({failed})"
    )
