"""The exact incremental decoder as a library object: code packets in, the audio they complete out.

    decoder = engine.stream_decoder()          # a core.StreamDecoder
    for packet in packets:                     # (n, 16) codes, any n >= 1, in order
        play(decoder.push(packet))             # n * samples_per_frame float32 samples at decoder.sample_rate
    play(decoder.finish())                     # the tail (this causal decoder holds nothing back: empty)
    decoder.reset()                            # the next utterance starts afresh on the same stream
    decoder.close()                            # or ``with engine.stream_decoder() as decoder:``

The audio equals ``Engine.decode`` of all the codes at once, whatever the packet sizes (float rounding
only: ≥ 80 dB in strict fp32; tests/core/model/test_stream_decoder.py), because the decoder carries every
layer's left state from packet to packet (``core.nn.decoding``) instead of re-decoding windows.

Where the work runs. On a GPU with an fp32 decoder every open stream is a slot of one batched step
(``core.model.stream_batcher``): a packet goes through as steps of 4 frames, then of 1, each shared
with the other streams' waiting packets. Elsewhere (a CPU, a guarded bf16 decoder) a stream steps its
own ``core.nn.streaming.StreamingDecoder`` under the engine's lock, a packet at a time; on a CPU on
one thread of the streams' own (``core.model.torch_threads``).

Bounds: :class:`StreamDecoders` (``engine.streams``) admits at most ``--decode-streams`` at once and,
on a GPU, no more than the measured step keeps in real time (``LOAD_SHARE``); the next is refused with
``LiveBusy`` giving the count. A stream takes codes the codec can have made (``core.codec.check_codes``)
and at most ``--max-duration`` of audio, then refuses with a sentence.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, check_codes, num_frames
from core.errors import LiveBusy, LiveSessionError, TokenFileError
from core.model import torch_threads
from core.model.family import output_rate_of
from core.model.stream_batcher import StreamBatcher, build_batcher, pool_wanted
from core.nn.decode_pool import packet_steps
from core.units import minutes

logger = logging.getLogger(__name__)

LOAD_SHARE = 0.75  # admit streams while their measured frames fill at most this share of each 80 ms
CPU_STEP_FRAMES = 300  # a stream on a CPU decodes up to this many frames of a packet in one step
WARM_FRAMES = 4  # the warm-up's first packet


class StreamDecoders:
    """The engine's open decode streams: admission (``--decode-streams``, measured cost) and cleanup."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self._open: set[StreamDecoder] = set()
        self._opening = 0  # streams being built (counted against the limit)
        self._guard = threading.Lock()
        self._batcher: StreamBatcher | None = None
        self._building = threading.Lock()
        self.thread = torch_threads.OneThread("stream-cpu")  # every stream's model work on a CPU
        self.pooled: bool | None = None  # streams share the batched step; None: ``pool_wanted`` decides

    @property
    def limit(self) -> int:
        return int(self.engine.settings.decode_streams)

    @property
    def in_use(self) -> int:
        with self._guard:
            return len(self._open)

    def use_pool(self) -> bool:
        return pool_wanted(self.engine) if self.pooled is None else self.pooled

    def batcher(self) -> StreamBatcher | None:
        """The shared batched step (built at the first stream on a GPU), or None (per-stream steps)."""
        if not self.use_pool():
            return None
        with self._building:
            if self._batcher is None:
                self._batcher = build_batcher(self.engine, max(1, self.limit))
        return self._batcher

    def capacity(self) -> int:
        """Streams the measured step keeps in real time (``LOAD_SHARE``), at most ``--decode-streams``."""
        batcher = self._batcher if self.use_pool() else None
        return self.limit if batcher is None else batcher.capacity(self.limit, LOAD_SHARE)

    def open(self) -> StreamDecoder:
        """A new stream; ``LiveBusy`` when all are in use or the device keeps no more in real time."""
        if self.limit <= 0:
            raise LiveBusy("Stream decoding is off on this server (--decode-streams 0).")
        batcher = self.batcher()
        with self._guard:
            count = len(self._open) + self._opening
            if count >= self.limit:
                raise LiveBusy(f"Stream decoding is busy: {count} of {self.limit} streams are open. Try again later.")
            capacity = self.capacity()
            if count >= capacity:
                raise LiveBusy(
                    f"Stream decoding is busy: {count} streams are open and this device keeps {capacity} "
                    "in real time. Try again in a moment."
                )
            self._opening += 1
        stream = None
        try:
            stream = StreamDecoder(self, batcher)  # its state is built outside the guard (the engine's lock)
        finally:
            with self._guard:
                self._opening -= 1
                if stream is not None:
                    self._open.add(stream)
        assert stream is not None
        return stream

    def warm(self) -> float | None:
        """Seconds to build the streams' step (on a GPU: the slot pools and every CUDA graph) and push a
        packet of 4 frames and one of 1 through it, so a server's first client does not pay for that; None
        when stream decoding is off or the engine is not ready."""
        if self.limit <= 0 or not self.engine.ready:
            return None
        started = time.perf_counter()
        try:
            with self.open() as stream:
                stream.push(np.zeros((WARM_FRAMES, NUM_CODEBOOKS), np.int64))
                stream.push(np.zeros((1, NUM_CODEBOOKS), np.int64))
        except Exception:  # noqa: BLE001 - the server still starts; the first stream tries again
            logger.exception("stream decoding could not be warmed")
            return None
        seconds = time.perf_counter() - started
        logger.info("stream decoding warmed in %.1f s", seconds)
        return seconds

    def _release(self, stream: StreamDecoder) -> None:
        with self._guard:
            self._open.discard(stream)

    def close_all(self) -> None:
        with self._guard:
            streams = list(self._open)
        for stream in streams:
            stream.close()
        self._batcher = None  # its slot pools belong to the model


class StreamDecoder:
    """One stream of code packets through the decoder (see the module docstring). Thread-safe: calls
    from several threads run one at a time."""

    def __init__(self, owner: StreamDecoders, batcher: StreamBatcher | None):
        self.owner, self.engine = owner, owner.engine
        rate = output_rate_of(self.engine.model)  # 48 kHz decoders of the family stream too
        self.sample_rate, self.samples_per_frame = rate.rate_hz, rate.samples_per_frame
        self.max_frames = num_frames(int(self.engine.settings.max_duration_s * SAMPLE_RATE))
        self._lock = threading.Lock()
        self._batcher = batcher
        self._slot: int | None = None
        self._decoder = None  # a ``core.nn.streaming.StreamingDecoder`` (per-stream path)
        self.closed = False
        self.frames = 0  # frames decoded since the last reset
        self.finished = False
        if batcher is not None:
            try:
                self._slot = batcher.open()
            except IndexError:
                raise LiveBusy("Stream decoding is busy: every slot is in use. Try again in a moment.") from None
        else:
            self._decoder = self._work(self._new_decoder)

    def _new_decoder(self):
        from core.nn.streaming import StreamingDecoder

        with self.engine.model_work("decode") as (_model, runner):
            return StreamingDecoder(runner, graphs=False, packet_frames=CPU_STEP_FRAMES)

    def _work(self, fn, *args):
        """``fn(*args)`` where model work runs: the streams' one thread on a CPU, the caller's otherwise."""
        return fn(*args) if self.engine.settings.is_cuda else self.owner.thread.call(fn, *args)

    # ---- the stream --------------------------------------------------------------------------------
    def push(self, codes) -> np.ndarray:
        """The audio (float32, ``n * samples_per_frame`` samples) of ``codes`` (n, 16), n >= 0."""
        with self._lock:
            self._check_open()
            if self.finished:
                raise LiveSessionError("This decode stream has finished; reset it to start a new utterance.")
            array = np.asarray(codes)
            if array.ndim == 1 and array.size == NUM_CODEBOOKS:
                array = array[None]
            if array.ndim == 2 and array.shape[0] == 0 and array.shape[1] == NUM_CODEBOOKS:
                return np.zeros(0, np.float32)
            array = check_codes(array)
            if self.frames + array.shape[0] > self.max_frames:
                raise TokenFileError(
                    f"This stream would pass {minutes(self.engine.settings.max_duration_s)} of audio "
                    "(--max-duration); finish it and start a new one."
                )
            audio = self._work(self._decode, array)
            self.frames += array.shape[0]
            return audio

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        if self._decoder is not None:
            with self.engine.model_work("decode"):
                return self._decoder.push(codes)
        batcher, out, low = self._batcher, [], 0
        assert batcher is not None and self._slot is not None
        for frames in packet_steps(codes.shape[0]):
            out.append(batcher.run(self._slot, np.ascontiguousarray(codes[low : low + frames])))
            low += frames
        return np.concatenate(out)

    def finish(self) -> np.ndarray:
        """The audio held back for the end of the utterance; the stream then takes no more codes
        until :meth:`reset`. The decoder is causal with no lookahead, so every frame's audio came
        out with its packet and the tail is empty."""
        with self._lock:
            self._check_open()
            self.finished = True
            return np.zeros(0, np.float32)

    def reset(self) -> None:
        """Forget everything: the next packet is the first of a new utterance."""
        with self._lock:
            self._check_open()
            if self._decoder is not None:
                self._decoder = self._work(self._new_decoder)
            elif self._batcher is not None and self._slot is not None:
                self._batcher.reset(self._slot)
            self.frames, self.finished = 0, False

    def _check_open(self) -> None:
        if self.closed:
            raise LiveSessionError("This decode stream is closed; open a new one.")

    def close(self) -> None:
        """Give back the stream's slot (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.owner._release(self)
        if self._batcher is not None and self._slot is not None:
            self._batcher.close(self._slot)
        self._slot, self._decoder = None, None

    def __enter__(self) -> StreamDecoder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
