"""GPU tests on the full-size random-weight checkpoint (published config), fp32 and bf16.

Run on the device machine (tests/conftest.py skips them where CUDA is absent):

    CODEC_FULL_CHECKPOINT=/tmp/full python -m pytest -v -s -m gpu tests/gpu

The checkpoint directory comes from CODEC_FULL_CHECKPOINT and is built there when missing
(from bench/reference-config.json). Figures are printed so the run's output can be committed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from core import streaming
from core.engine import Engine
from core.errors import OutOfMemory
from core.settings import Settings

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
SR = 24_000  # Hz
MIB = 1 << 20  # bytes in a MiB
PUBLISHED_RESIDENT_MIB = {"float32": 651, "bfloat16": 363}  # NOTES.md: weights + buffers resident


@pytest.fixture(scope="session")
def full_checkpoint(tmp_path_factory) -> Path:
    path = Path(os.environ.get("CODEC_FULL_CHECKPOINT", "") or tmp_path_factory.mktemp("full") / "ckpt")
    if not (path / "config.json").is_file():
        from core.checkpoints import build_full_checkpoint

        build_full_checkpoint(path, reference=ROOT / "bench" / "reference-config.json")
    return path


@pytest.fixture(scope="module", params=["float32", "bfloat16"])
def gpu_engine(request, full_checkpoint):
    engine = Engine(Settings(model=str(full_checkpoint), device="cuda:0", dtype=request.param))
    assert engine.load(), engine.error
    yield engine
    engine.unload()
    torch.cuda.empty_cache()


def test_readiness_reports_resident_weights(gpu_engine, speech):
    report = gpu_engine.check()
    cuda, weights, trip = report.steps
    print(f"\n[{gpu_engine.settings.dtype}] readiness: " + " | ".join(f"{s.name}={s.status}: {s.detail}" for s in report.steps))
    assert report.ok
    assert cuda.status == "pass" and cuda.data["bf16"] is True
    expected = PUBLISHED_RESIDENT_MIB[gpu_engine.settings.dtype]
    assert abs(weights.data["mib"] - expected) < 2, weights.data
    assert weights.data["allocated_mib"] >= weights.data["mib"]
    assert trip.status == "pass" and trip.data["frames"] == 13


def test_clear_vram_figures_move(gpu_engine, speech):
    gpu_engine.encode_array(speech(30.0))  # leaves cached blocks behind
    cleared = gpu_engine.clear_vram()
    before, after = cleared["before"], cleared["after"]
    print(f"\n[{gpu_engine.settings.dtype}] clear VRAM: allocated {before['allocated_mib']} -> {after['allocated_mib']} MiB, "
          f"reserved {before['reserved_mib']} -> {after['reserved_mib']} MiB, free {before['free_mib']} -> {after['free_mib']} MiB")
    assert before["reserved_mib"] > before["allocated_mib"]
    assert after["reserved_mib"] < before["reserved_mib"]
    assert after["free_mib"] > before["free_mib"]
    assert abs(after["allocated_mib"] - before["allocated_mib"]) < 1  # the weights stay
    assert after["allocated_mib"] >= PUBLISHED_RESIDENT_MIB[gpu_engine.settings.dtype] - 2


def whole_codes(engine: Engine, x: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return streaming.encode(engine.model, torch.from_numpy(x).cuda(), None).cpu().numpy()


def test_chunked_encode_agrees_and_stays_small(gpu_engine, speech):
    x = speech(100.0, seed=4)  # five 20 s windows, the last one partial
    x = x[: x.size - 777]
    result = gpu_engine.encode_array(x)
    agree = float(np.mean(result.codes == whole_codes(gpu_engine, x)))
    print(f"\n[{gpu_engine.settings.dtype}] 100 s chunked encode: agreement {agree:.5f}, peak {result.peak_mib:.0f} MiB")
    if gpu_engine.settings.dtype == "float32":
        assert agree == 1.0
    assert result.peak_mib < 3 * 1024
    decoded = gpu_engine.decode(result.codes)
    assert decoded.peak_mib < 3 * 1024 and decoded.samples.shape == (result.codes.shape[0] * 1920,)


def test_estimate_matches_measured_peak_within_reason(gpu_engine, speech):
    x = speech(120.0, seed=5)
    estimate = gpu_engine.estimate("encode", samples=x.size)
    measured = gpu_engine.encode_array(x).peak_mib
    print(f"\n[{gpu_engine.settings.dtype}] 120 s encode: estimate {estimate.peak_mib:.0f} MiB, measured {measured:.0f} MiB")
    assert estimate.fits
    assert measured * 0.8 <= estimate.peak_mib <= measured * 2.0


@pytest.fixture
def fp32_engine(full_checkpoint):
    engine = Engine(Settings(model=str(full_checkpoint), device="cuda:0", dtype="float32", encode_chunk_s=20.0,
                             min_chunk_s=5.0))
    assert engine.load(), engine.error
    yield engine
    torch.cuda.set_per_process_memory_fraction(1.0)
    engine.unload()
    torch.cuda.empty_cache()


def cap_memory(extra_mib: float) -> None:
    """Let this process allocate only what it holds now plus ``extra_mib``."""
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved(0) + extra_mib * MIB) / total)


def test_real_out_of_memory_retries_then_fails_clearly_then_recovers(fp32_engine, speech, caplog):
    x = speech(60.0, seed=6)
    expected = whole_codes(fp32_engine, x)
    cap_memory(400)  # 20 s windows need ≈0.6 GiB of activations: they fail, smaller ones fit
    with caplog.at_level(logging.WARNING, logger="core.engine"):
        result = fp32_engine.encode_array(x)
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    print(f"\n[float32] capped at +400 MiB: {len(retries)} retries, peak {result.peak_mib:.0f} MiB; " + " / ".join(retries))
    assert retries and np.array_equal(result.codes, expected)

    cap_memory(40)  # not even the 5 s floor fits
    with pytest.raises(OutOfMemory, match="smallest chunks") as failure:
        fp32_engine.encode_array(x)
    print(f"[float32] capped at +40 MiB: {failure.value}")
    assert fp32_engine.ready
    assert torch.cuda.memory_allocated(0) / MIB < PUBLISHED_RESIDENT_MIB["float32"] + 50  # nothing left behind
    torch.cuda.set_per_process_memory_fraction(1.0)
    assert np.array_equal(fp32_engine.encode_array(x).codes, expected)  # the next request succeeds


def test_refuses_what_cannot_fit(full_checkpoint):
    engine = Engine(Settings(model=str(full_checkpoint), device="cuda:0", dtype="float32",
                             encode_chunk_s=100_000.0))  # whole-clip encodes only: memory grows with length
    assert engine.load(), engine.error
    try:
        estimate = engine.estimate("encode", 10 * 3600.0)
        print(f"\n[float32] 10 h whole-clip estimate: {estimate.message}")
        assert not estimate.fits and estimate.peak_mib > 139 * 1024
        assert engine.estimate("encode", 60.0).fits
        with pytest.raises(OutOfMemory, match="does not fit"):
            engine.encode_array(np.zeros(int(2.5 * 3600 * SR), np.float32))
        assert engine.ready
    finally:
        engine.unload()
        torch.cuda.empty_cache()
