"""The memory planner: how to cut a job into chunks so that it fits, and what it will need.

Pure functions over a small record of the model's dimensions (:class:`ModelDims`, read once
when the model loads), the settings and the free memory the engine measured: nothing here
touches a device, so the planner is tested without a model (tests/core/model/test_planner.py).

The memory model is derived from the official path's measured peaks and checked against ours on
an H200: it overestimates by 20-30% (docs/performance.md, tests/gpu). Activations scale with a
layer width and the dtype's size.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from core.codec import FRAME_RATE, SAMPLE_RATE, SAMPLES_PER_FRAME, SAMPLES_PER_STEP, ceil_div
from core.nn.kv_cache import HOST_BLOCK_STEPS, kv_bytes_per_step, stage_bytes
from core.settings import Settings
from core.units import MIB

ENCODE_FLOATS_PER_SAMPLE_PER_FILTER = 5.5  # encoder conv activations: floats per input sample per SEANet filter
DECODE_FLOATS_PER_SAMPLE_PER_CHANNEL = 7.5  # decoder activations: floats per output sample per last-block channel
SPAN_FLOATS_PER_STEP_PER_HIDDEN = 12.0  # encoder transformer span activations: floats per step per hidden unit
DEVICE_OVERHEAD_MIB = 160.0  # CUDA context-independent slack: cuDNN workspaces, allocator rounding (MiB)
OPERATIONS = ("encode", "decode", "roundtrip")  # what a job can be
MIN_BATCH_WINDOW_SAMPLES = SAMPLE_RATE  # 1 s: shorter front-end windows recompute more context than they save


@dataclass(frozen=True)
class ModelDims:
    weight_bytes: int  # every parameter and buffer, resident on the device
    item_bytes: int  # bytes per element of the model's dtype (4 fp32, 2 bf16)
    encoder_filters: int  # SEANet base filters (encoder conv activations scale with it)
    encoder_hidden: int  # encoder transformer width
    encoder_layers: int  # encoder transformer layers (each keeps keys and values)
    kv_heads: int  # key/value heads per encoder attention layer
    head_dim: int  # width of one head
    conv_context_samples: int  # left context that makes an encoder window exact (samples)
    decoder_channels: int  # channels of the decoder's last block (decoder activations scale with it)
    output_samples_per_frame: int = SAMPLES_PER_FRAME  # decoded samples per code frame (3,840 at 48 kHz)

    @property
    def kv_bytes_per_step(self) -> int:
        """Bytes of encoder keys and values per 25 Hz step, all layers."""
        return kv_bytes_per_step(self.encoder_layers, self.kv_heads, self.head_dim, self.item_bytes)

    @classmethod
    def of(cls, model) -> ModelDims:
        """Read the dimensions of a loaded ``Qwen3TTSTokenizerV2Model`` (once, at load)."""
        from core.model.readiness import model_bytes
        from core.nn.encoding import conv_context_samples

        enc, dec = model.encoder.config, model.decoder.config
        attn = model.encoder.encoder_transformer.layers[0].self_attn
        return cls(
            weight_bytes=model_bytes(model),
            item_bytes=next(model.parameters()).element_size(),
            encoder_filters=int(enc.num_filters),
            encoder_hidden=int(enc.hidden_size),
            encoder_layers=int(enc.num_hidden_layers),
            kv_heads=int(attn.num_key_value_heads),
            head_dim=int(attn.head_dim),
            conv_context_samples=conv_context_samples(model),
            # a decoder with more blocks than the published four (48 kHz) counts the fourth block's channels
            # at its own output rate: on the safe side (its last blocks hold both)
            decoder_channels=int(dec.decoder_dim) // 2 ** min(len(dec.upsample_rates), 4),
            output_samples_per_frame=int(model.config.decode_upsample_rate),
        )


@dataclass(frozen=True)
class ChunkPlan:
    encode_chunk_samples: int  # samples per encoder convolution window (a whole number of frames)
    encode_span_steps: int  # encoder transformer steps per span (25 per second)
    kv_device_bytes: int | None  # encoder keys/values kept on the device (None: all of them)
    decode_chunk_frames: int  # code frames per decode chunk
    batch_samples: int  # padded samples per batched encode call
    batch_windows: bool = True  # short clips in few large batches with front-end time windows (core.nn.batching)


@dataclass(frozen=True)
class MemoryEstimate:
    operation: str  # "encode", "decode" or "roundtrip"
    seconds: float  # audio length the estimate is for, seconds (all clips together)
    peak_mib: float  # estimated peak device memory of the job, resident weights included (MiB)
    available_mib: float  # what the job may reach: weights + allowed share of free and cached memory (MiB)
    fits: bool  # True when peak_mib <= available_mib; jobs that do not fit are refused
    message: str  # one line for the user, e.g. "≈2.6 GiB of 139 GiB; fits"


def _whole_frames(samples: int) -> int:
    """``samples`` rounded down to whole frames, at least one frame."""
    return max(SAMPLES_PER_FRAME, samples // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME)


def base_plan(settings: Settings) -> ChunkPlan:
    """The plan the settings ask for, before any halving."""
    s = settings
    chunk = _whole_frames(int(s.encode_chunk_s * SAMPLE_RATE))
    span = max(2, int(s.encode_span_s * SAMPLE_RATE) // SAMPLES_PER_STEP // 2 * 2)
    kv = int(s.encode_kv_device_mib * MIB) if s.is_cuda else None
    batch = max(chunk, int(s.batch_audio_s * SAMPLE_RATE))
    return ChunkPlan(chunk, span, kv, int(s.decode_chunk_frames), batch, batch_windows(s))


def batch_windows(settings: Settings) -> bool:
    """Where windowed batches were measured good: the CPU, and fp32 on GPUs (TF32 or strict fp32).
    In strict fp32 an odd-length tail window once drew an FFT plan with a ≈75 GiB workspace; every
    window now has the same shape (``core.nn.batching``; bench/results/tokenize_bench-strict*.md)."""
    return not settings.is_cuda or settings.dtype == "float32"


def floors(settings: Settings) -> tuple[int, int]:
    """Smallest encode window (samples) and decode chunk (frames) that OOM retries go down to."""
    floor_s = settings.min_chunk_s
    return _whole_frames(int(floor_s * SAMPLE_RATE)), max(1, math.ceil(floor_s * FRAME_RATE))


def smaller(plan: ChunkPlan, settings: Settings) -> ChunkPlan | None:
    """The plan to retry with after an out-of-memory error: halved, not below the floor."""
    floor_samples, floor_frames = floors(settings)
    # halved, not below the floor, and never above the current plan (settings may start below the floor)
    chunk = min(
        plan.encode_chunk_samples,
        max(floor_samples, plan.encode_chunk_samples // 2 // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME),
    )
    frames = min(plan.decode_chunk_frames, max(floor_frames, plan.decode_chunk_frames // 2))
    kv = None if plan.kv_device_bytes is None else plan.kv_device_bytes // 2
    if chunk >= plan.encode_chunk_samples and frames >= plan.decode_chunk_frames:
        return None
    return ChunkPlan(chunk, plan.encode_span_steps, kv, frames, max(chunk, plan.batch_samples // 2), plan.batch_windows)


def groups(indices: list[int], sizes: list[int], budget: int) -> list[list[int]]:
    """Split ``indices`` (with ``sizes``) into groups, longest first, so that each group's padded
    size (members x longest) stays within ``budget``; a lone item may exceed it."""
    order = sorted(range(len(indices)), key=lambda j: -sizes[j])
    out: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for j in order:
        if current and (len(current) + 1) * max(longest, sizes[j]) > budget:
            out.append(current)
            current, longest = [], 0
        current.append(indices[j])
        longest = max(longest, sizes[j])
    if current:
        out.append(current)
    return out


def batch_groups(
    indices: list[int], sizes: list[int], budget: int, context: int, windows: bool = True
) -> list[tuple[list[int], int | None]]:
    """Groups of short clips (longest first), one batched encode each, with the encoder front-end's
    time window (``core.nn.batching``) that keeps members x (window + context) within ``budget``
    samples; None when the group's padded size fits whole. A group has as many members as 1 s
    windows allow: the GPU gets one large call instead of several small ones, in the same memory.
    ``windows=False``: budget-sized groups (:func:`groups`), each in one pass."""
    if not windows:
        return [(g, None) for g in groups(indices, sizes, budget)]
    cap = max(1, budget // (MIN_BATCH_WINDOW_SAMPLES + SAMPLES_PER_FRAME + context))  # a frame for the rounding
    order = sorted(range(len(indices)), key=lambda j: -sizes[j])
    out: list[tuple[list[int], int | None]] = []
    for start in range(0, len(order), cap):
        members = order[start : start + cap]
        longest = sizes[members[0]]
        window = None if len(members) * longest <= budget else _whole_frames(budget // len(members) - context)
        out.append(([indices[j] for j in members], window))
    return out


def batch_footprint(sizes: list[int], window: int | None, context: int) -> int:
    """Padded samples the encoder front-end holds at once for one batched group."""
    longest = max(sizes)
    return len(sizes) * (longest if window is None else min(longest, window + context))


def peak_bytes(dims: ModelDims, operation: str, lengths: list[int], plan: ChunkPlan, on_gpu: bool) -> float:
    """Estimated peak device bytes, resident weights included, of a job on clips of ``lengths`` samples."""
    item = dims.item_bytes
    longest = max(lengths)
    work = 0.0
    if operation in ("encode", "roundtrip"):
        per_sample = ENCODE_FLOATS_PER_SAMPLE_PER_FILTER * dims.encoder_filters * item
        if longest > plan.encode_chunk_samples:  # chunked: window + context, key/value cache, span
            steps = ceil_div(longest, SAMPLES_PER_STEP)
            per_step = dims.kv_bytes_per_step
            kv = steps * per_step
            stage = 0
            if plan.kv_device_bytes is not None and kv > plan.kv_device_bytes:
                kv = plan.kv_device_bytes // per_step * per_step
                stage = stage_bytes(dims.kv_heads, dims.head_dim, item, HOST_BLOCK_STEPS)
            span = SPAN_FLOATS_PER_STEP_PER_HIDDEN * min(plan.encode_span_steps, steps) * dims.encoder_hidden * item
            window = plan.encode_chunk_samples + dims.conv_context_samples
            work = per_sample * window + kv + stage + span
        short = [n for n in lengths if n <= plan.encode_chunk_samples]
        if short:  # padded batches of short clips: the front-end's windows, then the transformer on all steps
            context = dims.conv_context_samples
            for group, batch_window in batch_groups(
                list(range(len(short))), short, plan.batch_samples, context, plan.batch_windows
            ):
                sizes = [short[i] for i in group]
                steps = len(sizes) * ceil_div(max(sizes), SAMPLES_PER_STEP)
                transformer = SPAN_FLOATS_PER_STEP_PER_HIDDEN * steps * dims.encoder_hidden * item
                work = max(work, per_sample * batch_footprint(sizes, batch_window, context), transformer)
    if operation in ("decode", "roundtrip"):
        per_frame = DECODE_FLOATS_PER_SAMPLE_PER_CHANNEL * dims.decoder_channels * item * dims.output_samples_per_frame
        frames = min(plan.decode_chunk_frames, max(ceil_div(n, SAMPLES_PER_FRAME) for n in lengths))
        work = max(work, per_frame * frames)
    overhead = DEVICE_OVERHEAD_MIB * MIB if on_gpu else 0.0
    # On the CPU the device is the host: the decoded audio lives beside the activations.
    output = 0.0 if on_gpu else output_bytes(operation, lengths, dims.output_samples_per_frame)
    return dims.weight_bytes + work + overhead + output


def output_bytes(operation: str, lengths: list[int], samples_per_frame: int = SAMPLES_PER_FRAME) -> float:
    """Host RAM of the decoded float32 audio (the decoder writes it into one buffer), ``samples_per_frame``
    decoded samples for each code frame of the input lengths."""
    if operation not in ("decode", "roundtrip"):
        return 0.0
    return 4.0 * sum(ceil_div(n, SAMPLES_PER_FRAME) * samples_per_frame for n in lengths)


def host_bytes(dims: ModelDims, operation: str, lengths: list[int], plan: ChunkPlan, on_gpu: bool) -> float:
    """Host RAM a GPU job adds: offloaded encoder keys/values and the decoded float32 audio (on the
    CPU both are part of :func:`peak_bytes`)."""
    if not on_gpu:
        return 0.0
    total = 0.0
    if operation in ("encode", "roundtrip") and plan.kv_device_bytes is not None:
        steps = max(ceil_div(n, SAMPLES_PER_STEP) for n in lengths)
        if max(lengths) > plan.encode_chunk_samples:
            total += max(0, steps * dims.kv_bytes_per_step - plan.kv_device_bytes)
    return total + output_bytes(operation, lengths, dims.output_samples_per_frame)


def describe(operation: str, lengths: list[int], peak: float, available: float, device: str) -> MemoryEstimate:
    """The estimate of a job as the user sees it."""
    seconds = sum(lengths) / SAMPLE_RATE
    fits = peak <= available
    verdict = "fits" if fits else "does not fit: free memory (Clear VRAM) or use a shorter clip"
    where = "GPU" if device.startswith("cuda") else "RAM"
    message = (
        f"{operation} of {seconds:.1f} s needs ≈{peak / MIB / 1024:.2f} GiB of {where} "
        f"(model weights included); {available / MIB / 1024:.2f} GiB available on {device}: {verdict}."
    )
    return MemoryEstimate(operation, seconds, round(peak / MIB, 1), round(available / MIB, 1), fits, message)


def choose(
    dims: ModelDims, settings: Settings, operation: str, lengths: list[int], free_bytes: float, host_free_bytes: float
) -> tuple[ChunkPlan | None, MemoryEstimate]:
    """The largest plan whose estimate fits (halving down to the floor), and that estimate; (None,
    the first estimate) when none fits. ``free_bytes``: device memory a job can still take (free plus
    our cache; available RAM on the CPU); ``host_free_bytes``: available host RAM."""
    fraction = settings.max_batch_memory_fraction
    available = dims.weight_bytes + fraction * free_bytes
    host_free = fraction * host_free_bytes
    plan: ChunkPlan | None = base_plan(settings)
    first = None
    while plan is not None:
        estimate = describe(
            operation, lengths, peak_bytes(dims, operation, lengths, plan, settings.is_cuda), available, settings.device
        )
        host = host_bytes(dims, operation, lengths, plan, settings.is_cuda)
        if host > host_free:
            estimate = dataclasses.replace(
                estimate,
                fits=False,
                message=(
                    f"{operation} of {estimate.seconds:.1f} s also needs ≈{host / MIB / 1024:.2f} GiB of "
                    f"host RAM (offloaded keys/values, decoded audio); {host_free / MIB / 1024:.2f} GiB "
                    "available: does not fit. Use a shorter clip."
                ),
            )
        first = first or estimate
        if estimate.fits:
            return plan, estimate
        plan = smaller(plan, settings)
    assert first is not None  # base_plan always gives one plan
    return None, first


def second_model_estimate(
    weight_bytes: float, work_bytes: float, free_bytes: float, fraction: float, device: str, reference_s: float
) -> MemoryEstimate:
    """Whether a second checkpoint fits beside the first before it is loaded: its weights
    (``core.model.weights.checkpoint_weight_bytes``) plus the working memory of a ``reference_s``
    round trip must fit in ``fraction`` of what is free now (``free_bytes`` already excludes the
    first model's weights, which are resident)."""
    need, available = weight_bytes + work_bytes, fraction * free_bytes
    fits = need <= available
    where = "GPU" if device.startswith("cuda") else "RAM"
    verdict = (
        "fits"
        if fits
        else "does not fit: it was not loaded. Free memory (Clear VRAM, unload the second checkpoint, stop other "
        "programs), use a smaller dtype (--compare-dtype bfloat16 on a GPU) or leave --compare-model out"
    )
    message = (
        f"The second checkpoint needs ≈{weight_bytes / MIB / 1024:.2f} GiB of {where} for its weights and "
        f"≈{work_bytes / MIB / 1024:.2f} GiB for a {reference_s:g} s round trip; {available / MIB / 1024:.2f} GiB "
        f"is available on {device} beside the first model: {verdict}."
    )
    return MemoryEstimate("load", reference_s, round(need / MIB, 1), round(available / MIB, 1), fits, message)
