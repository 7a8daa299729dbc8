"""GPU tests on the full-size random-weight checkpoint (published config), fp32 and bf16.

Run on the device machine (tests/conftest.py skips them where CUDA is absent):

    CODEC_FULL_CHECKPOINT=/tmp/full python -m pytest -v -s -m gpu tests/gpu

The checkpoint directory comes from CODEC_FULL_CHECKPOINT and is built there when missing
(from core/model/reference-config.json; see conftest.py). Figures are printed so the run's output can be committed.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.model.engine import Engine
from core.nn import conv_layout, kernels
from core.settings import Settings

pytestmark = pytest.mark.gpu

FP32_RESIDENT_MIB = 651  # NOTES.md: weights + buffers of the published architecture in fp32
# bf16: the load casts every parameter and buffer, so exactly half (325 MiB). NOTES.md says ≈363 MiB; keeping
# the encoder's codebook buffers (64 MiB) in fp32 would give ≈357 MiB: the note's figure is not what this load does.
RESIDENT_MIB = {"float32": FP32_RESIDENT_MIB, "bfloat16": FP32_RESIDENT_MIB / 2}


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
    print(
        f"\n[{gpu_engine.settings.dtype}] readiness: "
        + " | ".join(f"{s.name}={s.status}: {s.detail}" for s in report.steps)
    )
    assert report.ok
    assert cuda.status == "pass" and cuda.data["bf16"] is True
    assert abs(weights.data["mib"] - RESIDENT_MIB[gpu_engine.settings.dtype]) < 2, weights.data
    assert weights.data["allocated_mib"] >= weights.data["mib"]
    assert trip.status == "pass" and trip.data["frames"] == 13


def test_clear_vram_figures_move(gpu_engine, speech):
    gpu_engine.encode_array(speech(30.0))  # leaves cached blocks behind
    cleared = gpu_engine.clear_vram()
    before, after = cleared["before"], cleared["after"]
    print(
        f"\n[{gpu_engine.settings.dtype}] clear VRAM: allocated {before['allocated_mib']} -> {after['allocated_mib']} MiB, "
        f"reserved {before['reserved_mib']} -> {after['reserved_mib']} MiB, free {before['free_mib']} -> {after['free_mib']} MiB"
    )
    assert before["reserved_mib"] > before["allocated_mib"]
    assert after["reserved_mib"] < before["reserved_mib"]
    assert after["free_mib"] > before["free_mib"]
    assert abs(after["allocated_mib"] - before["allocated_mib"]) < 1  # the weights stay
    assert after["allocated_mib"] >= RESIDENT_MIB[gpu_engine.settings.dtype] - 2


def test_chunked_encode_agrees_and_stays_small(gpu_engine, speech, whole_codes):
    x = speech(100.0, seed=4)  # five 20 s windows, the last one partial
    x = x[: x.size - 777]
    result = gpu_engine.encode_array(x)
    agree = float(np.mean(result.codes == whole_codes(gpu_engine, x).numpy()))
    print(
        f"\n[{gpu_engine.settings.dtype}] 100 s chunked encode: agreement {agree:.5f} with the whole-clip encode, "
        f"peak {result.peak_mib:.0f} MiB"
    )
    if gpu_engine.settings.dtype == "float32":
        assert agree == 1.0  # full-fp32 encodes on both sides
    else:
        assert agree > 0.8  # bf16 rounding depends on shapes; the bench reports the figure
    assert result.peak_mib < 3 * 1024
    decoded = gpu_engine.decode(result.codes)
    assert decoded.peak_mib < 3 * 1024 and decoded.samples.shape == (result.codes.shape[0] * 1920,)


def test_estimate_matches_measured_peak_within_reason(gpu_engine, speech):
    x = speech(120.0, seed=5)
    estimate = gpu_engine.estimate("encode", samples=x.size)
    measured = gpu_engine.encode_array(x).peak_mib
    print(
        f"\n[{gpu_engine.settings.dtype}] 120 s encode: estimate {estimate.peak_mib:.0f} MiB, measured {measured:.0f} MiB"
    )
    assert estimate.fits
    assert measured * 0.8 <= estimate.peak_mib <= measured * 2.0


def test_fused_snake_matches_the_module(gpu_engine):
    from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import SnakeBeta

    assert kernels._snake_kernel() is not None, "Triton is missing: decodes fall back to the unfused SnakeBeta"
    snakes = [m for m in gpu_engine.model.decoder.modules() if isinstance(m, SnakeBeta)]
    dtype = next(gpu_engine.model.parameters()).dtype
    worst = 0.0
    with torch.inference_mode():
        for module in snakes[:: max(1, len(snakes) // 6)]:
            x = torch.randn(2, module.in_features, 3001, device="cuda", dtype=dtype)
            last = conv_layout.channels_last(x)
            for view in (x, x[..., 1:], last, last[..., 1:]):  # contiguous, strided, channels-last, both
                ref = module(view).float()
                worst = max(
                    worst,
                    ((snake := kernels.snake_beta(module, view).float()) - ref).abs().max().item()
                    / ref.abs().max().item(),
                )
                assert snake.shape == ref.shape
                assert (snake.stride(1) == 1) == (view.stride(1) == 1)  # channels-last stays channels-last
    print(f"\n[{gpu_engine.settings.dtype}] fused SnakeBeta: worst relative difference {worst:.2e}")
    assert worst < (1e-5 if dtype == torch.float32 else 2e-2)
