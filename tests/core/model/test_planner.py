"""core/model/planner.py: chunk plans, halving and memory estimates as pure functions, without a model.

The dimensions are those of the published checkpoint (docs/performance.md): 8 encoder layers of
8 key/value heads of 64, 512 hidden, 64 SEANet filters, 96 decoder channels in the last block.
"""

from __future__ import annotations

import dataclasses

import pytest

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.model import planner
from core.model.planner import ChunkPlan, ModelDims
from core.settings import Settings
from core.units import MIB

DIMS = ModelDims(
    weight_bytes=651 * MIB,
    item_bytes=4,
    encoder_filters=64,
    encoder_hidden=512,
    encoder_layers=8,
    kv_heads=8,
    head_dim=64,
    conv_context_samples=5760,
    decoder_channels=96,
)
GPU = Settings(model="unused", device="cuda:0")
CPU = Settings(model="unused", device="cpu")


def test_kv_bytes_per_step_counts_keys_and_values_of_every_layer():
    assert DIMS.kv_bytes_per_step == 2 * 8 * 8 * 64 * 4  # 32 KiB per 25 Hz step
    assert dataclasses.replace(DIMS, item_bytes=2).kv_bytes_per_step == DIMS.kv_bytes_per_step // 2


def test_base_plan_follows_the_settings_in_whole_frames():
    plan = planner.base_plan(dataclasses.replace(GPU, encode_chunk_s=1.01, encode_kv_device_mib=10.0))
    assert plan.encode_chunk_samples == SAMPLE_RATE // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME  # 12 frames, not 12.6
    assert plan.kv_device_bytes == 10 * MIB
    assert planner.base_plan(CPU).kv_device_bytes is None  # the CPU keeps every key and value in RAM


@pytest.mark.parametrize(
    "changes",
    [
        dict(encode_chunk_s=2.0, min_chunk_s=5.0, decode_chunk_frames=300),
        dict(encode_chunk_s=20.0, min_chunk_s=5.0, decode_chunk_frames=10),
    ],
)
def test_oom_retries_never_grow_a_chunk_above_the_configured_one(changes):
    # with a chunk setting below the min_chunk_s floor, a retry used to jump *up* to the floor
    settings = dataclasses.replace(CPU, **changes)
    plan: ChunkPlan | None = planner.base_plan(settings)
    steps = 0
    while (smaller := planner.smaller(plan, settings)) is not None:
        assert smaller.encode_chunk_samples <= plan.encode_chunk_samples
        assert smaller.decode_chunk_frames <= plan.decode_chunk_frames
        assert (smaller.encode_chunk_samples, smaller.decode_chunk_frames) != (
            plan.encode_chunk_samples,
            plan.decode_chunk_frames,
        )
        plan, steps = smaller, steps + 1
    assert steps >= 1


def test_encode_estimate_grows_with_length_until_the_clip_is_chunked_then_only_with_its_cache():
    plan = planner.base_plan(GPU)
    peak = {s: planner.peak_bytes(DIMS, "encode", [int(s * SAMPLE_RATE)], plan, True) for s in (5, 20, 60, 600, 3600)}
    assert peak[5] < peak[20]  # whole-clip path: activations grow with the clip
    assert peak[60] < peak[600]  # chunked: keys and values of every step so far
    kv_600 = 600 * 25 * DIMS.kv_bytes_per_step
    span = planner.SPAN_FLOATS_PER_STEP_PER_HIDDEN * DIMS.encoder_hidden * DIMS.item_bytes  # per step of a span
    assert peak[600] - peak[60] == (600 - 60) * 25 * (DIMS.kv_bytes_per_step + span)
    # past the device budget the cache stops growing on the device (the rest goes to host RAM)
    assert peak[3600] - peak[600] < kv_600
    assert planner.host_bytes(DIMS, "encode", [3600 * SAMPLE_RATE], plan, True) > 0
    assert planner.host_bytes(DIMS, "encode", [3600 * SAMPLE_RATE], plan, False) == 0


def test_decode_estimate_is_bounded_by_the_chunk():
    plan = planner.base_plan(GPU)
    short, long = (planner.peak_bytes(DIMS, "decode", [n * SAMPLES_PER_FRAME], plan, True) for n in (300, 45_000))
    assert short == long
    assert planner.host_bytes(DIMS, "decode", [45_000 * SAMPLES_PER_FRAME], plan, True) == 4 * 45_000 * 1920


def test_choose_halves_until_it_fits_and_refuses_with_the_first_estimate():
    lengths = [60 * SAMPLE_RATE]
    plan, estimate = planner.choose(DIMS, GPU, "roundtrip", lengths, free_bytes=80 << 30, host_free_bytes=64 << 30)
    assert plan == planner.base_plan(GPU) and estimate.fits and estimate.message.endswith("fits.")
    need = planner.peak_bytes(DIMS, "roundtrip", lengths, plan, True) - DIMS.weight_bytes
    tight, _ = planner.choose(DIMS, GPU, "roundtrip", lengths, free_bytes=need * 0.7 / 0.9, host_free_bytes=64 << 30)
    assert tight is not None and tight.encode_chunk_samples < plan.encode_chunk_samples
    none, refused = planner.choose(DIMS, GPU, "roundtrip", lengths, free_bytes=1 << 20, host_free_bytes=64 << 30)
    assert none is None and not refused.fits and "does not fit" in refused.message
    assert refused.peak_mib == estimate.peak_mib  # the user sees what the configured plan needs


def test_host_ram_refuses_a_job_whose_decoded_audio_does_not_fit():
    lengths = [3600 * SAMPLE_RATE]
    plan, estimate = planner.choose(DIMS, GPU, "decode", lengths, free_bytes=80 << 30, host_free_bytes=100 * MIB)
    assert plan is None and "host RAM" in estimate.message


def test_groups_keep_each_padded_batch_within_the_budget():
    sizes = [5, 1, 4, 2, 3]
    groups = planner.groups(list(range(5)), sizes, budget=8)
    assert sorted(i for g in groups for i in g) == [0, 1, 2, 3, 4]
    for g in groups:
        assert len(g) == 1 or len(g) * max(sizes[i] for i in g) <= 8
    assert planner.groups([0], [100], budget=8) == [[0]]  # a lone item may exceed it


def test_cpu_estimate_counts_the_decoded_audio_in_ram():
    """Issue 8, item 1: on the CPU the decoded audio lives in the same RAM as the activations; an
    hour of it (345 MB) is refused with 500 MiB available, though the decoder's activations alone
    (at the smallest chunk, ≈350 MB) would fit."""
    hour = [3600 * SAMPLE_RATE]
    plan = planner.base_plan(CPU)
    output = 4 * 3600 * SAMPLE_RATE
    assert (
        planner.peak_bytes(DIMS, "decode", hour, plan, False)
        - planner.peak_bytes(DIMS, "decode", [plan.decode_chunk_frames * SAMPLES_PER_FRAME], plan, False)
        >= output * 0.99
    )
    free = 500 * MIB
    chosen, estimate = planner.choose(DIMS, CPU, "decode", hour, free_bytes=free, host_free_bytes=free)
    assert chosen is None and not estimate.fits and "does not fit" in estimate.message
    ten_s, fits = planner.choose(DIMS, CPU, "decode", [10 * SAMPLE_RATE], free_bytes=free, host_free_bytes=free)
    assert ten_s is not None and fits.fits
