"""One step for the frames of many live sessions: slot pools, batch-size buckets, CUDA graphs.

:class:`LiveBatch` owns ``slots`` session slots (plus one scratch slot) of encoder state
(``core.nn.batch_encoder``) and decoder state (``core.nn.batch_decoder``). A step takes up to
``max(BUCKETS)`` rows, one per session: a frame of 1,920 samples to encode and decode, or a code
frame to decode only (a session's padded last frame, encoded eagerly by
:meth:`LiveBatch.last_frame`). The rows go into the smallest bucket that holds them; the bucket's
other rows are padding, pointed at the scratch slot, so they read and write no session's state.

On a GPU each bucket is two CUDA graphs, the encode (captured under the encode's backend flags, one
per bucket of keys attended over: ``KEY_BUCKET_STEPS``) and the decode (under the decode's flags),
replayed back to back: per step one host-to-device copy of the rows' samples and slots, two replays,
one device-to-host copy of codes and audio, one synchronisation. cuDNN picks each convolution's
algorithm by timing while a graph is captured (``TUNE_CONVOLUTIONS``; the algorithms stay within the
flags: no TF32 under strict fp32). On a CPU the same step runs eagerly.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from core.codec import NUM_CODEBOOKS, SAMPLES_PER_FRAME
from core.nn.batch_decoder import BatchDecoderStream
from core.nn.batch_encoder import STEPS_PER_FRAME, BatchEncoder
from core.nn.decoding import samples_per_frame

logger = logging.getLogger(__name__)

BUCKETS = (1, 2, 4, 8, 16, 32)  # batch sizes with a graph each; a step's rows go into the smallest that holds them
KEY_BUCKET_STEPS = 512  # the encode attends over keys in buckets of this many steps (20.5 s): a graph each
WARM_RUNS = 2  # eager runs on a side stream before a capture (cuBLAS/cuDNN handles, algorithm timing)
TUNE_CONVOLUTIONS = True  # let cuDNN time convolution algorithms for the captured shapes


def bucket_for(rows: int) -> int:
    """The smallest bucket that holds ``rows`` rows."""
    for size in BUCKETS:
        if rows <= size:
            return size
    raise ValueError(f"a live batch takes at most {BUCKETS[-1]} rows, not {rows}")


@dataclass(frozen=True)
class Row:
    """One session's share of a step: its slot and a frame of samples, or codes to decode only."""

    slot: int
    samples: np.ndarray | None = None  # (1920,) float32 24 kHz: encode and decode
    codes: np.ndarray | None = None  # (16,) int64: decode only


class _Bucket:
    """A bucket's static buffers (device, and pinned host ones on a GPU) and its graphs."""

    def __init__(self, size: int, device: torch.device, dtype: torch.dtype, out_per_frame: int = SAMPLES_PER_FRAME):
        pin = device.type == "cuda"
        self.size = size
        self.samples = torch.zeros(size, SAMPLES_PER_FRAME, device=device, dtype=dtype)
        self.index = torch.zeros(3, size, dtype=torch.long, device=device)  # encode slots, decode slots, positions
        self.codes = torch.zeros(size, NUM_CODEBOOKS, dtype=torch.long, device=device)
        self.audio = torch.zeros(size, out_per_frame, device=device, dtype=dtype)  # the decoder's samples a frame
        self.host_samples = torch.zeros(size, SAMPLES_PER_FRAME, dtype=dtype, pin_memory=pin)
        self.host_index = torch.zeros(3, size, dtype=torch.long, pin_memory=pin)
        self.host_codes = torch.zeros(size, NUM_CODEBOOKS, dtype=torch.long, pin_memory=pin)
        self.host_audio = torch.zeros(size, out_per_frame, dtype=torch.float32, pin_memory=pin)
        # numpy views of the host inputs: a step fills them without a torch call per element
        self.np_index = self.host_index.numpy()
        self.np_samples = self.host_samples.numpy() if dtype == torch.float32 else None
        self.encode_graphs: dict[int, torch.cuda.CUDAGraph] = {}  # per key span
        self.decode_graph: torch.cuda.CUDAGraph | None = None


class LiveBatch:
    """Slot pools and the batched live step (see the module docstring).

    ``model``: the tokenizer model (its encoder); ``decoder``: the decoder in the decode precision
    (fp32: a guarded bf16 decoder needs its per-chunk check and stays per session); ``steps``: encoder
    steps a slot holds; ``flags(operation)``: a context manager setting that operation's backend
    flags (graphs are captured under them); ``capture``: CUDA graphs (False: eager, as on a CPU)."""

    def __init__(
        self,
        model,
        decoder,
        slots: int,
        steps: int,
        flags: Callable[[str], contextlib.AbstractContextManager],
        capture: bool,
    ):
        self.slots, self.scratch = int(slots), int(slots)
        self.encoder = BatchEncoder(model, self.slots + 1, steps)
        self.decoder = BatchDecoderStream(decoder, self.slots + 1)
        self.flags, self.capture = flags, capture
        param = next(model.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.free = list(range(self.slots))
        self.steps_done = [0] * (self.slots + 1)  # encoder steps per slot (host side: picks the key span)
        self.buckets = {
            size: _Bucket(size, self.device, self.dtype, samples_per_frame(decoder))
            for size in BUCKETS
            if size <= bucket_for(self.slots)
        }
        self.pool = torch.cuda.graph_pool_handle() if capture else None
        if capture:  # every bucket's first graphs now, so no session waits for a capture at its first frame
            for bucket in self.buckets.values():
                self._encode_graph(bucket, min(KEY_BUCKET_STEPS, self.encoder.steps))
                self._decode_graph(bucket)

    def measure(self, reps: int = 5) -> dict[int, float]:
        """Seconds of each bucket's two replays (every row on the scratch slot), from captured graphs:
        the batched step's cost before a session has run (admission); {} when not captured."""
        if not self.capture:
            return {}
        out = {}
        for size, bucket in self.buckets.items():
            bucket.index[:2].fill_(self.scratch)
            bucket.index[2].zero_()
            span = min(bucket.encode_graphs)
            for _ in range(2):
                bucket.encode_graphs[span].replay()
            torch.cuda.synchronize(self.device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                bucket.encode_graphs[span].replay()
                assert bucket.decode_graph is not None
                bucket.decode_graph.replay()
            end.record()
            end.synchronize()
            out[size] = start.elapsed_time(end) / 1000 / reps
        return out

    # ---- slots -------------------------------------------------------------------------------------
    def open(self) -> int:
        """A free slot, reset (moshi style: explicit state reset); ``IndexError`` when none is free."""
        if not self.free:
            raise IndexError("every live slot is in use")
        slot = self.free.pop(0)
        with torch.inference_mode():  # the pools are inference tensors
            self.encoder.reset(slot)
            self.decoder.reset(slot)
        self.steps_done[slot] = 0
        return slot

    def close(self, slot: int) -> None:
        if slot not in self.free and 0 <= slot < self.slots:
            self.free.append(slot)

    @property
    def in_use(self) -> int:
        return self.slots - len(self.free)

    def last_frame(self, slot: int, window: np.ndarray, skip_samples: int, first: bool) -> np.ndarray:
        """Codes (16,) of a session's padded last frame, eagerly (decode them with a codes-only row)."""
        position = self.steps_done[slot]
        wav = torch.from_numpy(np.ascontiguousarray(window, dtype=np.float32))
        codes = self.encoder.last_frame(slot, wav, skip_samples, position, first)
        self.steps_done[slot] = position + STEPS_PER_FRAME
        return codes[0].cpu().numpy().astype(np.int64)

    # ---- the step ----------------------------------------------------------------------------------
    def step(self, rows: list[Row]) -> tuple[np.ndarray, np.ndarray]:
        """Codes (n, 16) and audio (n, 1920) float32 of ``rows`` (at most one per slot), in order."""
        if len({r.slot for r in rows}) != len(rows):
            raise ValueError("a live batch takes one row per session")
        bucket = self.buckets[bucket_for(len(rows))]
        hs, hi = bucket.np_samples, bucket.np_index
        hi[:2] = self.scratch
        hi[2] = 0
        encodes, span = False, STEPS_PER_FRAME
        for i, row in enumerate(rows):
            hi[1, i] = row.slot
            if row.samples is not None:
                encodes = True
                position = self.steps_done[row.slot]
                if position + STEPS_PER_FRAME > self.encoder.steps:
                    raise ValueError("a live session ran past the steps its slot holds")
                if hs is None:
                    bucket.host_samples[i].copy_(torch.from_numpy(row.samples))
                else:
                    hs[i] = row.samples
                hi[0, i], hi[2, i] = row.slot, position
                self.steps_done[row.slot] = position + STEPS_PER_FRAME
                span = max(span, position + STEPS_PER_FRAME)
            elif hs is None:
                bucket.host_samples[i].zero_()
            else:
                hs[i] = 0
        hs_t = bucket.host_samples
        blocking = self.device.type != "cuda"
        bucket.samples.copy_(hs_t, non_blocking=not blocking)
        bucket.index.copy_(bucket.host_index, non_blocking=not blocking)
        if encodes:
            self._encode(bucket, -(-span // KEY_BUCKET_STEPS) * KEY_BUCKET_STEPS)
        for i, row in enumerate(rows):
            if row.samples is None:
                bucket.codes[i].copy_(torch.from_numpy(np.asarray(row.codes, dtype=np.int64)))
        self._decode(bucket)
        bucket.host_codes.copy_(bucket.codes, non_blocking=not blocking)
        bucket.host_audio.copy_(bucket.audio, non_blocking=not blocking)
        if not blocking:
            torch.cuda.current_stream(self.device).synchronize()
        n = len(rows)
        return bucket.host_codes[:n].numpy().copy(), bucket.host_audio[:n].numpy().copy()

    def _encode_step(self, bucket: _Bucket, span: int) -> None:
        codes = self.encoder.step(bucket.samples, bucket.index[0], bucket.index[2], span)
        bucket.codes.copy_(codes)

    def _decode_step(self, bucket: _Bucket) -> None:
        bucket.audio.copy_(self.decoder.step_rows(bucket.codes, bucket.index[1]))

    def _encode(self, bucket: _Bucket, span: int) -> None:
        span = min(span, self.encoder.steps)
        if not self.capture:
            with self.flags("encode"):
                self._encode_step(bucket, span)
            return
        graph = bucket.encode_graphs.get(span) or self._encode_graph(bucket, span)
        graph.replay()

    def _decode(self, bucket: _Bucket) -> None:
        if not self.capture:
            with self.flags("decode"):
                self._decode_step(bucket)
            return
        graph = bucket.decode_graph or self._decode_graph(bucket)
        graph.replay()

    def _encode_graph(self, bucket: _Bucket, span: int) -> torch.cuda.CUDAGraph:
        graph = bucket.encode_graphs[span] = self._captured(bucket, "encode", lambda: self._encode_step(bucket, span))
        return graph

    def _decode_graph(self, bucket: _Bucket) -> torch.cuda.CUDAGraph:
        bucket.decode_graph = self._captured(bucket, "decode", lambda: self._decode_step(bucket))
        return bucket.decode_graph

    def _captured(self, bucket: _Bucket, operation: str, step) -> torch.cuda.CUDAGraph:
        """``step`` warmed up and captured with every row on the scratch slot (the warm-up runs really
        run: they must touch no session), under ``operation``'s flags; the bucket's inputs restored."""
        saved = bucket.index.clone(), bucket.samples.clone(), bucket.codes.clone()
        bucket.index[:2].fill_(self.scratch)
        bucket.index[2].zero_()
        cudnn = torch.backends.cudnn
        tuned = cudnn.benchmark
        with self.flags(operation):
            cudnn.benchmark = TUNE_CONVOLUTIONS or tuned
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(WARM_RUNS):
                    step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                step()
            cudnn.benchmark = tuned
        for buffer, value in zip((bucket.index, bucket.samples, bucket.codes), saved, strict=True):
            buffer.copy_(value)
        logger.debug("captured the live %s step for %d rows", operation, bucket.size)
        return graph
