"""Streaming state objects for live audio: samples in, codes out; codes in, samples out.

Both carry exactly the state the offline chunked paths carry, so a clip pushed in blocks of any size
gives the codes of the whole-clip encode and the audio of the chunked decode:

- :class:`StreamingEncoder` keeps the last ``conv_context_samples`` of real audio before the next
  frame (the SEANet's left context) and an ``EncoderState`` (``core.nn.encoding``: the encoder's
  keys/values at absolute positions, with the engine's offload rule, and the stride-2 convolution's
  tail). A frame's codes depend only on samples up to its end (the encoder is causal, with no
  lookahead), so each frame is encoded as soon as its last sample arrives; ``finish`` encodes the
  last, partial frame padded as the whole-clip encode pads it.
- :class:`StreamingDecoder` runs ``core.nn.decoding.DecoderStream`` through the engine's decoder runner
  (``core.nn.fast_decode``: precision, bf16 guard, layout), one frame at a time.

Work is done one frame at a time whatever the block size, so the computation, and therefore every
bit of the output, does not depend on how the samples were cut into blocks (float matmuls round
differently for different row counts: MKL on a CPU differs by ≈1e-7 between 1 and 16 rows). Against
the offline decode, which runs 300-frame chunks, the audio agrees to fp32 rounding (docs/live.md).

Input conditioning (downmix, streaming resample to 24 kHz, NaN and length checks, clipping counts)
is ``core.audio.blocks.Collector``, the same object every file reader feeds, so the 24 kHz signal the
encoder sees is the one ``load_audio`` would make of the same samples.

On a GPU (``graphs=True``) each full-window encode frame and every decode frame is one CUDA graph
replay (``core.nn.live_graphs``); the CPU keeps the eager step. Nothing here locks or retries; ``core.model.live`` runs these under the engine's lock, one frame
of work at a time. Every call runs under the caller's ``torch.inference_mode()``.
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from core.audio.blocks import Audio, Collector, Source, finish
from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME, SAMPLES_PER_STEP, ceil_div
from core.errors import AudioInputError
from core.nn.encode_step import ChannelsLastSEANet, PreparedQuantizer
from core.nn.encoding import EncoderState
from core.nn.live_graphs import DecoderGraph, EncoderGraph
from core.settings import AudioLimits

logger = logging.getLogger(__name__)

LIVE_FORMAT = "live"  # AudioFacts.format of a live recording


class MicrophoneInput:
    """A microphone's blocks (any rate, any channel count, (n,) or (n, channels)) as 24 kHz mono,
    through the file readers' ``Collector``. Keeps the whole 24 kHz recording (bounded by
    ``limits.max_duration_s``); ``finish`` returns it as an ``Audio`` with its facts."""

    def __init__(self, sample_rate: int, channels: int, limits: AudioLimits, name: str = "microphone"):
        if int(sample_rate) <= 0 or int(channels) <= 0:
            raise AudioInputError(
                f"A live input needs a positive sample rate and channel count, not {sample_rate} Hz, {channels} channels."
            )
        self.name, self.limits = name, limits
        self.source = Source(LIVE_FORMAT, int(sample_rate), int(channels), None)
        self.reset()

    def reset(self) -> None:
        self.collector = Collector(self.name, self.source, self.limits)
        self.ended = False

    def push(self, block: np.ndarray) -> np.ndarray:
        """The new 24 kHz mono samples that ``block`` completes (the resampler holds a few back)."""
        if self.ended:
            raise AudioInputError("This live input has ended; start a new session.")
        block = np.asarray(block, dtype=np.float32)
        if block.ndim == 1:
            block = block[:, None]
        if block.ndim != 2 or block.shape[1] != self.source.channels:
            raise AudioInputError(f"A live block must have shape (samples, {self.source.channels}), not {block.shape}.")
        return self.collector.add(block)

    def end(self) -> np.ndarray:
        """The resampler's last samples; the input takes no more blocks."""
        self.ended = True
        return self.collector.flush()

    @property
    def seconds(self) -> float:
        """Seconds of input received so far (at the input's own rate)."""
        return self.collector.frames / self.source.sample_rate

    def recording(self) -> Audio:
        """Everything received, as 24 kHz mono with its facts (clipping, silence, resampling)."""
        self.end()
        return finish(self.name, self.source, self.collector, self.limits)


class StreamingEncoder:
    """24 kHz mono samples in, code frames (n, 16) out as soon as each frame's last sample arrives.

    ``max_samples``: the longest input this stream takes (its keys/values are preallocated for it,
    on the device up to ``kv_device_bytes`` and in host memory beyond, as the engine's encode does).
    """

    def __init__(
        self,
        model,
        max_samples: int,
        kv_device_bytes: int | None = None,
        graphs: bool = False,
        packet_frames: int = 1,
    ):
        self.model = model
        self.max_samples = int(max_samples)
        self.kv_device_bytes = kv_device_bytes
        self.graphs = graphs  # capture the full-window frame step as a CUDA graph (``core.nn.live_graphs``)
        # frames encoded together (the eager step; a graph replays one frame at a time): a packet of n
        # frames is encoded once its last sample is in, so it adds (n - 1) x 80 ms of latency
        self.packet_frames = max(1, int(packet_frames))
        self.state: EncoderState | None = None
        self.graph: EncoderGraph | None = None
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next sample is the first of a new clip."""
        self.close()
        steps = ceil_div(self.max_samples, SAMPLES_PER_STEP) + 2  # + the padded last frame
        self.state = EncoderState(self.model, steps, self.kv_device_bytes)
        self.context = self.state.context
        self.graph = EncoderGraph(self.state) if self.graphs and not self.state.kv.host_steps else None
        # without a graph, the SEANet streams channels-last with each convolution's last inputs as its
        # state (``core.nn.encode_step``), so a frame costs 1,920 samples of convolutions, not context +
        # 1,920, and the quantizer's codebooks are prepared once
        self.seanet = None if self.graph is not None else ChannelsLastSEANet(self.model.encoder.encoder)
        if self.graph is None:
            self.state.quantize = PreparedQuantizer(self.state.mimi.quantizer, self.state.num_q).encode
        self.buffer = np.zeros(0, np.float32)  # samples from ``buffer_start`` on (pending blocks not yet joined)
        self.buffer_start = 0  # absolute index of buffer[0]
        self.pending: list[np.ndarray] = []  # blocks since the last frame, joined once a frame completes
        self.samples_in = 0  # samples pushed so far
        self.frames_out = 0  # frames encoded so far
        self.finished = False

    @property
    def next_end(self) -> int:
        """The sample count at which the next packet (``packet_frames`` frames) is complete."""
        return (self.frames_out + self.packet_frames) * SAMPLES_PER_FRAME

    def push(self, samples: np.ndarray) -> np.ndarray:
        """Codes (n, 16) of the packets these samples complete (n: 0 or a multiple of ``packet_frames``)."""
        if self.finished:
            raise AudioInputError("This encoder stream has finished; reset it to start a new clip.")
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        if self.samples_in + samples.size > self.max_samples:
            raise AudioInputError(
                f"A live session takes at most {self.max_samples / SAMPLE_RATE:.0f} s of audio "
                "(--live-max-s); start a new session."
            )
        self.pending.append(samples.copy())  # the caller may reuse its array
        self.samples_in += samples.size
        out = []
        if self.next_end <= self.samples_in:
            self._join()
        while self.next_end <= self.samples_in:
            out.append(self._encode_packet(self.packet_frames))
        return _codes(out)

    def finish(self) -> np.ndarray:
        """Codes of what is left: the whole frames of an unfinished packet, then the last, partial
        frame (padded as the whole-clip encode pads it), if any."""
        if self.finished:
            return _codes([])
        self.finished = True
        self._join()
        out = []
        whole = self.samples_in // SAMPLES_PER_FRAME - self.frames_out
        if whole > 0:
            out.append(self._encode_packet(whole))
        if self.samples_in > self.frames_out * SAMPLES_PER_FRAME:
            out.append(self._encode_frame(self.samples_in))
        return _codes(out)

    def _join(self) -> None:
        if self.pending:
            self.buffer = np.concatenate([self.buffer, *self.pending])
            self.pending = []

    def _encode_packet(self, frames: int) -> np.ndarray:
        """Encode ``frames`` whole frames from ``frames_out`` on: one pass of the eager step, or one
        graph replay per frame."""
        if self.seanet is None:
            return _codes([self._encode_frame((self.frames_out + 1) * SAMPLES_PER_FRAME) for _ in range(frames)])
        assert self.state is not None
        start = self.frames_out * SAMPLES_PER_FRAME
        end = start + frames * SAMPLES_PER_FRAME
        x = torch.from_numpy(self.buffer[start - self.buffer_start : end - self.buffer_start])
        steps = self.seanet(x.to(device=self.state.device, dtype=self.state.dtype)[None, None])
        codes = self.state.frames(steps, start // SAMPLES_PER_STEP)
        self._advance(frames)
        return codes[:frames].cpu().numpy()

    def _encode_frame(self, end: int) -> np.ndarray:
        """Encode the frame that starts at ``frames_out``, from samples up to ``end``, with its left
        context from the buffer (a graph replay, or a whole window for the padded last frame)."""
        assert self.state is not None
        start = self.frames_out * SAMPLES_PER_FRAME
        low = max(0, start - self.context)
        window = torch.from_numpy(self.buffer[low - self.buffer_start : end - self.buffer_start])
        if self.graph is not None and start >= self.context and end - start == SAMPLES_PER_FRAME:
            codes = self.graph.encode(window, start // SAMPLES_PER_STEP)  # one replay
        else:  # the first frames under a graph (less context than the window) and the padded last one
            codes = self.state.frames(self.state.conv_steps(window, start - low), start // SAMPLES_PER_STEP)
        self._advance(1)
        return codes[:1].cpu().numpy()

    def _advance(self, frames: int) -> None:
        self.frames_out += frames
        keep_from = max(0, self.frames_out * SAMPLES_PER_FRAME - self.context)  # the next frame's context
        self.buffer = self.buffer[keep_from - self.buffer_start :]
        self.buffer_start = keep_from

    def close(self) -> None:
        """Free the keys/values (``reset`` makes new ones)."""
        if self.state is not None:
            self.state.close()
            self.state = None
        self.graph = None


def _codes(frames: list[np.ndarray]) -> np.ndarray:
    if not frames:
        return np.zeros((0, NUM_CODEBOOKS), np.int64)
    return np.concatenate(frames).astype(np.int64)


class StreamingDecoder:
    """Code frames (n, 16) in, 24 kHz samples (n * 1920) out, through the engine's decoder runner."""

    def __init__(self, runner, graphs: bool = False, packet_frames: int = 1, winograd: int = 0):
        self.runner = runner  # a ``core.nn.fast_decode.FastDecoder``
        self.winograd = winograd  # on a CPU: Winograd F(m, 7) tile of the kernel-7 convolutions (0: direct)
        self.stream = None
        self.packet_frames = max(1, int(packet_frames))  # frames per decoder step (eager; a graph takes one)
        # a CUDA graph of the one-frame step (``core.nn.live_graphs``); a guarded bf16 decoder stays eager
        self.graph: DecoderGraph | None = None
        if graphs and not runner.guarded:
            self.graph = DecoderGraph(runner.decoder)
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next frame is the first of a new clip."""
        self.stream = self.runner.stream(1, self.winograd)
        if self.graph is not None:
            self.graph.reset()
        self.frames_in = 0

    def push(self, codes: np.ndarray) -> np.ndarray:
        """The audio of these frames, float32 (1920 samples a frame), in steps of ``packet_frames``
        frames (one frame per graph replay); the bf16 guard checks each step."""
        codes = np.asarray(codes, dtype=np.int64).reshape(-1, NUM_CODEBOOKS)
        device = next(self.runner.decoder.parameters()).device
        out = []
        step = 1 if self.graph is not None else self.packet_frames
        for low in range(0, codes.shape[0], step):
            frames = codes[low : low + step]
            if self.graph is not None:
                out.append(self.graph.decode(torch.from_numpy(frames[0]))[0].float().cpu().numpy())
            else:
                chunk = torch.from_numpy(np.ascontiguousarray(frames.T)).to(device)[None]  # (1, 16, frames)
                out.append(self.runner.step(self.stream, chunk)[0].float().cpu().numpy())
            self.frames_in += frames.shape[0]
        return np.concatenate(out) if out else np.zeros(0, np.float32)

    def close(self) -> None:
        self.stream = None
        self.graph = None
