"""Many decode streams in one step: slot pools, packet steps of 1 or 4 frames, batch buckets, CUDA graphs.

:class:`PacketDecoderStream` is ``core.nn.batch_decoder.BatchDecoderStream`` taking ``T`` frames per
row instead of one: each row's 72-step sliding window holds its last 72 keys and values, a step
attends over the 71 before it plus its own ``T``, masked by each row's absolute position, and every
causal convolution and transposed convolution carries its left state per slot. A row's audio is
therefore the offline decode's audio for its frames (float rounding only) whatever the other rows hold.

:class:`DecodePool` owns ``slots`` slots (plus one scratch slot) and, per batch bucket and packet
size (``PACKET_FRAMES``), static buffers and on a GPU one CUDA graph captured under the decode's
backend flags. A step takes at most one row per slot, every row with the same number of frames; the
bucket's other rows point at the scratch slot. Per step: one host-to-device copy of codes and slots,
one replay, one device-to-host copy of audio, one synchronisation. On a CPU the same step runs eagerly.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import numpy as np
import torch

from core.codec import NUM_CODEBOOKS
from core.nn.batch_decoder import BatchDecoderStream
from core.nn.decoding import run_transformer_layers, samples_per_frame

logger = logging.getLogger(__name__)

BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)  # rows per step with a graph each; a step goes into the smallest that holds it
PACKET_FRAMES = (4, 1)  # frames per row of a step: a packet of n frames is n // 4 steps of 4, then steps of 1
WARM_RUNS = 2  # eager runs on a side stream before a capture (cuBLAS/cuDNN handles, algorithm timing)


def bucket_for(rows: int) -> int:
    """The smallest bucket that holds ``rows`` rows."""
    for size in BUCKETS:
        if rows <= size:
            return size
    raise ValueError(f"a decode step takes at most {BUCKETS[-1]} rows, not {rows}")


def packet_steps(frames: int) -> list[int]:
    """Frames per step for a packet of ``frames`` frames: as many 4s as fit, then 1s."""
    big = PACKET_FRAMES[0]
    return [big] * (frames // big) + [1] * (frames % big)


class PacketDecoderStream(BatchDecoderStream):
    """``T`` frames for each of B slots per :meth:`step_rows` (see the module docstring)."""

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        """Each row's 71 previous keys and values, then its ``T`` new ones; the last 72 are kept."""
        out = []
        for pool, new in ((self.keys[layer_idx], key_states), (self.values[layer_idx], value_states)):
            joined = torch.cat([pool.index_select(0, self.idx)[:, :, 1:], new], dim=2)
            pool.index_copy_(0, self.idx, joined[:, :, joined.shape[2] - self.window :])
            out.append(joined)
        return out[0], out[1]

    def _transformer(self, hidden):
        tr = self.decoder.pre_transformer
        x = tr.input_proj(hidden)
        frames = x.shape[1]
        offsets = torch.arange(frames, device=x.device)
        positions = self._positions[:, None] + offsets[None, :]  # (B, T)
        # key j of a row holds the step at position - (window - 1) + j (j < window - 1 + T)
        keys = self._positions[:, None] - (self.window - 1) + torch.arange(self.window - 1 + frames, device=x.device)
        query = positions[:, :, None]
        key = keys[:, None, :]
        mask = ((key >= 0) & (key <= query) & (key > query - self.window))[:, None]  # (B, 1, T, window - 1 + T)
        return run_transformer_layers(tr, x, mask, positions, self)

    def step_rows(self, codes: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """Audio (B, T * 1920) of ``T`` frames per row: ``codes`` (B, 16, T), ``idx`` (B,) the rows' slots."""
        self.idx = idx
        self._positions = self.frames.index_select(0, idx)
        out = self.tail(self.head(codes))
        self.frames.index_copy_(0, idx, self._positions + codes.shape[-1])
        return out[:, 0]


class _Bucket:
    """Static buffers of one (rows, frames) step, and its graph."""

    def __init__(self, size: int, frames: int, samples_per_frame: int, device: torch.device, dtype: torch.dtype):
        pin = device.type == "cuda"
        self.size, self.frames = size, frames
        self.codes = torch.zeros(size, NUM_CODEBOOKS, frames, dtype=torch.long, device=device)
        self.index = torch.zeros(size, dtype=torch.long, device=device)
        self.audio = torch.zeros(size, frames * samples_per_frame, dtype=dtype, device=device)
        self.host_codes = torch.zeros(size, NUM_CODEBOOKS, frames, dtype=torch.long, pin_memory=pin)
        self.host_index = torch.zeros(size, dtype=torch.long, pin_memory=pin)
        self.host_audio = torch.zeros(size, frames * samples_per_frame, dtype=torch.float32, pin_memory=pin)
        self.np_codes, self.np_index = self.host_codes.numpy(), self.host_index.numpy()
        self.graph: torch.cuda.CUDAGraph | None = None


class DecodePool:
    """Slot pools and the batched decode step (see the module docstring).

    ``decoder``: the decoder in the decode precision (fp32; a guarded bf16 decoder keeps its
    per-chunk check per stream); ``flags(operation)``: a context manager setting that operation's
    backend flags (graphs are captured under them); ``capture``: CUDA graphs (False: eager)."""

    def __init__(
        self,
        decoder,
        slots: int,
        flags: Callable[[str], contextlib.AbstractContextManager],
        capture: bool,
    ):
        self.slots, self.scratch = int(slots), int(slots)
        self.stream = PacketDecoderStream(decoder, self.slots + 1)
        self.flags, self.capture = flags, capture
        param = next(decoder.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.samples_per_frame = samples_per_frame(decoder)  # 1,920 at 24 kHz, 3,840 for the 48 kHz decoder
        self.free = list(range(self.slots))
        largest = bucket_for(min(self.slots, BUCKETS[-1]))
        self.buckets = {
            (size, frames): _Bucket(size, frames, self.samples_per_frame, self.device, self.dtype)
            for size in BUCKETS
            if size <= largest
            for frames in PACKET_FRAMES
        }
        self.pool = torch.cuda.graph_pool_handle() if capture else None
        if capture:  # every graph now, so no stream waits for a capture at its first packet
            for bucket in self.buckets.values():
                self._graph(bucket)

    @property
    def max_rows(self) -> int:
        return max(size for size, _ in self.buckets)

    def measure(self, reps: int = 5) -> dict[tuple[int, int], float]:
        """Seconds of each (rows, frames) step's replay, every row on the scratch slot: the step's cost
        before a stream has run (admission); {} when not captured."""
        if not self.capture:
            return {}
        out = {}
        for key, bucket in self.buckets.items():
            bucket.index.fill_(self.scratch)
            graph = self._graph(bucket)
            graph.replay()
            torch.cuda.synchronize(self.device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                graph.replay()
            end.record()
            end.synchronize()
            out[key] = start.elapsed_time(end) / 1000 / reps
        return out

    # ---- slots -------------------------------------------------------------------------------------
    def open(self) -> int:
        """A free slot, reset (explicit state reset); ``IndexError`` when none is free."""
        if not self.free:
            raise IndexError("every decode slot is in use")
        slot = self.free.pop(0)
        self.reset(slot)
        return slot

    def reset(self, slot: int) -> None:
        with torch.inference_mode():  # the pools are inference tensors
            self.stream.reset(slot)

    def close(self, slot: int) -> None:
        if slot not in self.free and 0 <= slot < self.slots:
            self.free.append(slot)

    @property
    def in_use(self) -> int:
        return self.slots - len(self.free)

    # ---- the step ----------------------------------------------------------------------------------
    def step(self, slots: list[int], codes: list[np.ndarray]) -> np.ndarray:
        """Audio (n, T * samples a frame) float32 of ``codes[i]`` (T, 16) for slot ``slots[i]`` (distinct), in order."""
        if len(set(slots)) != len(slots):
            raise ValueError("a decode step takes one row per stream")
        frames = int(codes[0].shape[0])
        bucket = self.buckets[(bucket_for(len(slots)), frames)]
        bucket.np_index[:] = self.scratch
        bucket.np_codes[:] = 0
        for i, (slot, rows) in enumerate(zip(slots, codes, strict=True)):
            if rows.shape != (frames, NUM_CODEBOOKS):
                raise ValueError(f"every row of a decode step has {frames} frames of {NUM_CODEBOOKS} codes")
            bucket.np_index[i] = slot
            bucket.np_codes[i] = rows.T
        blocking = self.device.type != "cuda"
        bucket.codes.copy_(bucket.host_codes, non_blocking=not blocking)
        bucket.index.copy_(bucket.host_index, non_blocking=not blocking)
        if self.capture:
            self._graph(bucket).replay()
        else:
            with self.flags("decode"):
                self._run(bucket)
        bucket.host_audio.copy_(bucket.audio, non_blocking=not blocking)
        if not blocking:
            torch.cuda.current_stream(self.device).synchronize()
        return bucket.host_audio[: len(slots)].numpy().copy()

    def _run(self, bucket: _Bucket) -> None:
        bucket.audio.copy_(self.stream.step_rows(bucket.codes, bucket.index))

    def _graph(self, bucket: _Bucket) -> torch.cuda.CUDAGraph:
        """The bucket's graph: warmed up and captured with every row on the scratch slot (the warm-up
        runs really run: they must touch no stream), under the decode's flags."""
        if bucket.graph is not None:
            return bucket.graph
        saved = bucket.index.clone(), bucket.codes.clone()
        bucket.index.fill_(self.scratch)
        cudnn = torch.backends.cudnn
        tuned = cudnn.benchmark
        with self.flags("decode"):
            cudnn.benchmark = True  # cuDNN times the algorithms for the captured shapes (within the flags)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(WARM_RUNS):
                    self._run(bucket)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                self._run(bucket)
            cudnn.benchmark = tuned
        for buffer, value in zip((bucket.index, bucket.codes), saved, strict=True):
            buffer.copy_(value)
        bucket.graph = graph
        logger.debug("captured the decode step for %d rows of %d frames", bucket.size, bucket.frames)
        return graph
