"""The engine's calls into the model under a chunk plan: numpy in, numpy out.

No lock and no retries here: ``core.model.engine`` owns both and calls these inside its job loop. The
long-clip machinery lives in ``core.nn.encoding``, ``core.nn.batching`` and ``core.nn.decoding``; this
module only picks the path for each clip and sets the backend flags a job runs under.
"""

from __future__ import annotations

import contextlib
import typing

import numpy as np
import torch

from core.codec import ceil_div
from core.model import planner
from core.model.planner import ChunkPlan, ModelDims
from core.nn import batching, decoding, encoding
from core.settings import Settings


@contextlib.contextmanager
def backend_flags(settings: Settings, operation: str):
    """Backend flags for the engine's own jobs only (restored after, so other code in the process
    keeps its settings): cuDNN autotuning as configured, and for fp32 encodes full-fp32
    convolutions. PyTorch lets cuDNN use TF32 for fp32 convolutions by default; its ≈1e-3 relative
    rounding depends on the algorithm cuDNN picks for each shape, and the quantizer's nearest-code
    search turns that into different codes (≈1% with random codebooks on an H200), so chunked and
    whole-clip encodes could only agree up to that noise. Decodes keep the default."""
    if not settings.is_cuda:
        yield
        return
    cudnn = torch.backends.cudnn
    previous = cudnn.benchmark, cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    cudnn.benchmark = settings.cudnn_benchmark
    if operation == "encode" and settings.strict_fp32_encode and settings.dtype == "float32":
        cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        cudnn.benchmark, cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = previous


def encode_tensor(model, samples: np.ndarray, plan: ChunkPlan, progress=None, between=None) -> np.ndarray:
    """One clip's codes (frames, 16), chunked as the plan says; ``between()`` runs between its pieces
    of work (the engine hands its lock to live frames there)."""
    wav = torch.from_numpy(samples)  # stays on the host when chunked: windows move one at a time
    codes = encoding.encode(
        model,
        wav,
        plan.encode_chunk_samples,
        span_steps=plan.encode_span_steps,
        kv_device_bytes=plan.kv_device_bytes,
        on_progress=progress,
        between=between,
    )
    return codes.cpu().numpy()


def encode_batch_tensors(
    model, dims: ModelDims | None, arrays, plan: ChunkPlan, between: typing.Callable[[], None] = lambda: None
) -> list[np.ndarray]:
    """Several clips: long ones chunked one by one, short ones in padded batches. ``between()`` runs
    between two pieces of work (windows, batches): the engine hands its lock to live frames there."""
    out: list[np.ndarray | None] = [None] * len(arrays)
    short = []
    for i, a in enumerate(arrays):
        if a.size > plan.encode_chunk_samples:
            out[i] = encode_tensor(model, a, plan, between=between)
            between()
        else:
            short.append(i)
    context = dims.conv_context_samples if dims else 0
    sizes = [arrays[i].size for i in short]
    for group, window in planner.batch_groups(short, sizes, plan.batch_samples, context, plan.batch_windows):
        tensors = [torch.from_numpy(arrays[i]) for i in group]
        for i, codes in zip(group, batching.encode_batch(model, tensors, window), strict=True):
            out[i] = codes.cpu().numpy()
        between()
    return typing.cast("list[np.ndarray]", out)  # every index was filled above


def decode_tensor(model, runner, codes: np.ndarray, plan: ChunkPlan, progress=None) -> tuple[np.ndarray, tuple]:
    """One clip's audio and the warnings of chunks that ``runner`` (core.nn.fast_decode) had to redo."""
    runner.take_warnings(0)  # a failed attempt's redone chunks do not belong to this one
    wav = decoding.decode(model, torch.from_numpy(codes), plan.decode_chunk_frames, progress, runner)
    return wav.float().numpy(), runner.take_warnings(ceil_div(codes.shape[0], plan.decode_chunk_frames))


def decode_batch_tensors(
    model, runner, codes_list, plan: ChunkPlan, between: typing.Callable[[], None] = lambda: None
) -> tuple[list[np.ndarray], tuple]:
    """Several clips' audio, in groups whose chunk calls hold about one clip's chunk each; ``between()``
    runs after each chunk (the engine hands its lock to live frames there)."""
    out: list[np.ndarray | None] = [None] * len(codes_list)
    order = list(range(len(codes_list)))
    frames = [c.shape[0] for c in codes_list]
    runner.take_warnings(0)
    chunks = 0
    for group in planner.groups(order, frames, plan.decode_chunk_frames):
        chunk = max(1, plan.decode_chunk_frames // len(group))  # a chunk call holds ≈ one clip's chunk
        wavs = decoding.decode_batch(
            model, [torch.from_numpy(codes_list[i]) for i in group], chunk, lambda _f: between(), runner
        )
        chunks += ceil_div(max(frames[i] for i in group), chunk)
        for i, w in zip(group, wavs, strict=True):
            out[i] = w.float().numpy()
    return typing.cast("list[np.ndarray]", out), runner.take_warnings(chunks)  # every index was filled
