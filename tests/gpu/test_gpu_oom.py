"""Out-of-memory protection on the GPU with real CUDA out-of-memory errors (fp32, full-size random
checkpoint): a per-process memory cap (``torch.cuda.set_per_process_memory_fraction``) makes a chunk
fail, the engine frees and retries with smaller chunks down to its floor, then fails with a clear
message, and the next request succeeds. The pre-flight estimate reads the driver's free memory, which
the cap does not change, so these jobs start and meet the cap.

    CODEC_FULL_CHECKPOINT=/tmp/full python -m pytest -v -s -m gpu tests/gpu
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import torch

from core.errors import OutOfMemory
from core.model.engine import Engine
from core.settings import Settings

pytestmark = pytest.mark.gpu

MIB = 1 << 20  # bytes in a MiB


@pytest.fixture
def fp32_engine(full_checkpoint):
    engine = Engine(
        Settings(model=str(full_checkpoint), device="cuda:0", dtype="float32", encode_chunk_s=20.0, min_chunk_s=10.0)
    )  # retries: 20 s windows -> 10 s (the floor) -> give up
    assert engine.load(), engine.error
    yield engine
    torch.cuda.set_per_process_memory_fraction(1.0)
    engine.unload()
    torch.cuda.empty_cache()


def cap_memory(extra_mib: float) -> tuple[bool, str]:
    """Let this process reserve only what it reserves now plus ``extra_mib``. Returns whether the
    allocator enforces it (a probe bigger than the cap plus the cached slack fails) and the figures."""
    torch.cuda.empty_cache()
    allocated, reserved = torch.cuda.memory_allocated(0), torch.cuda.memory_reserved(0)
    limit = reserved + extra_mib * MIB
    torch.cuda.set_per_process_memory_fraction(limit / torch.cuda.get_device_properties(0).total_memory)
    figures = f"allocated {allocated / MIB:.0f} MiB, reserved {reserved / MIB:.0f} MiB, cap {limit / MIB:.0f} MiB"
    try:
        probe = torch.empty(int(reserved - allocated + (extra_mib + 64) * MIB), dtype=torch.uint8, device="cuda")
    except torch.cuda.OutOfMemoryError:
        return True, figures
    del probe
    torch.cuda.empty_cache()
    return False, figures


def allocator() -> str:
    return (
        f"allocator backend {torch.cuda.get_allocator_backend()}, "
        f"PYTORCH_CUDA_ALLOC_CONF={os.environ.get('PYTORCH_CUDA_ALLOC_CONF')!r}"
    )


def test_real_out_of_memory_retries_then_fails_clearly_then_recovers(fp32_engine, speech, caplog, whole_codes):
    x = speech(60.0, seed=6)
    expected = whole_codes(fp32_engine, x).numpy()
    resident = torch.cuda.memory_allocated(0) / MIB
    free_run = fp32_engine.encode_array(x)  # 20 s windows, no cap
    need = free_run.peak_mib - resident  # what a 20 s window needs beyond the weights
    assert np.array_equal(free_run.codes, expected)

    enforced, figures = cap_memory(0.6 * need)
    print(
        f"\n[float32] 60 s encode needs {need:.0f} MiB beyond {resident:.0f} MiB resident; cap +{0.6 * need:.0f} MiB "
        f"({figures}) enforced: {enforced} ({allocator()})"
    )
    assert enforced, "the per-process memory fraction is not enforced here: " + allocator()
    with caplog.at_level(logging.WARNING, logger="core.model.engine"):
        result = fp32_engine.encode_array(x)
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    print(
        f"[float32] capped: {len(retries)} retr{'y' if len(retries) == 1 else 'ies'}, peak {result.peak_mib:.0f} MiB\n  "
        + "\n  ".join(retries)
    )
    assert retries and np.array_equal(result.codes, expected)

    enforced, figures = cap_memory(0.0)  # nothing beyond what is reserved now: not even the 10 s floor fits
    assert enforced, figures
    with pytest.raises(OutOfMemory, match="smallest chunks") as failure:
        fp32_engine.encode_array(x)
    print(f"[float32] capped at +0 MiB ({figures}): OutOfMemory: {failure.value}")
    assert fp32_engine.ready
    assert torch.cuda.memory_allocated(0) / MIB < resident + 16  # the failed attempts left nothing behind
    torch.cuda.set_per_process_memory_fraction(1.0)
    after = fp32_engine.encode_array(x)  # the next request succeeds
    assert np.array_equal(after.codes, expected)
    print(f"[float32] cap lifted: next request succeeded, peak {after.peak_mib:.0f} MiB")


def test_refuses_what_cannot_fit_and_shrinks_what_can(full_checkpoint):
    engine = Engine(
        Settings(
            model=str(full_checkpoint),
            device="cuda:0",
            dtype="float32",
            encode_chunk_s=3600.0,
            max_batch_memory_fraction=0.05,
        )
    )
    assert engine.load(), engine.error
    try:
        big = engine.estimate("encode", 1800.0)  # whole-clip would need ≈53 GiB; 5% of the card is ≈7 GiB
        print(f"\n[float32] 30 min encode with 1 h windows allowed, 5% of free memory: {big.message}")
        assert big.fits and big.peak_mib < 0.05 * 141 * 1024  # the planner shrank the windows until it fits
        tight = Engine(
            Settings(model=str(full_checkpoint), device="cuda:0", dtype="float32", max_batch_memory_fraction=1e-4)
        )
        assert tight.load(), tight.error
        try:
            refused = tight.estimate("decode", 60.0)
            print(f"[float32] 0.01% of free memory: {refused.message}")
            assert not refused.fits
            with pytest.raises(OutOfMemory, match="does not fit"):
                tight.decode(np.zeros((750, 16), np.int64))
            assert tight.ready
        finally:
            tight.unload()
    finally:
        engine.unload()
        torch.cuda.empty_cache()
