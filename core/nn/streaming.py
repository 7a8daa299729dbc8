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

    def __init__(self, model, max_samples: int, kv_device_bytes: int | None = None, graphs: bool = False):
        self.model = model
        self.max_samples = int(max_samples)
        self.kv_device_bytes = kv_device_bytes
        self.graphs = graphs  # capture the full-window frame step as a CUDA graph (``core.nn.live_graphs``)
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
        # without a graph, the SEANet streams: each convolution keeps its last inputs (transformers'
        # padding cache), so a frame costs 1,920 samples of convolutions, not context + 1,920
        self.padding_cache = None if self.graph is not None else _seanet_padding_cache(self.model.encoder)
        self.buffer = np.zeros(0, np.float32)  # samples from ``buffer_start`` on (pending blocks not yet joined)
        self.buffer_start = 0  # absolute index of buffer[0]
        self.pending: list[np.ndarray] = []  # blocks since the last frame, joined once a frame completes
        self.samples_in = 0  # samples pushed so far
        self.frames_out = 0  # frames encoded so far
        self.finished = False

    def push(self, samples: np.ndarray) -> np.ndarray:
        """Codes (n, 16) of the frames these samples complete (n may be 0)."""
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
        if (self.frames_out + 1) * SAMPLES_PER_FRAME <= self.samples_in:
            self._join()
        while (self.frames_out + 1) * SAMPLES_PER_FRAME <= self.samples_in:
            out.append(self._encode_frame((self.frames_out + 1) * SAMPLES_PER_FRAME))
        return _codes(out)

    def finish(self) -> np.ndarray:
        """Codes of the last, partial frame (padded as the whole-clip encode pads it), if any."""
        if self.finished:
            return _codes([])
        self.finished = True
        self._join()
        if self.samples_in > self.frames_out * SAMPLES_PER_FRAME:
            return _codes([self._encode_frame(self.samples_in)])
        return _codes([])

    def _join(self) -> None:
        if self.pending:
            self.buffer = np.concatenate([self.buffer, *self.pending])
            self.pending = []

    def _encode_frame(self, end: int) -> np.ndarray:
        """Encode the frame that starts at ``frames_out``, from samples up to ``end``."""
        assert self.state is not None
        start = self.frames_out * SAMPLES_PER_FRAME
        low = max(0, start - self.context)
        window = torch.from_numpy(self.buffer[low - self.buffer_start : end - self.buffer_start])
        if self.graph is not None and start >= self.context and end - start == SAMPLES_PER_FRAME:
            codes = self.graph.encode(window, start // SAMPLES_PER_STEP)  # one replay
        elif self.padding_cache is not None and end - start == SAMPLES_PER_FRAME:
            frame = window[start - low :].to(device=self.state.device, dtype=self.state.dtype)
            steps = self.state.mimi.encoder(frame[None, None], padding_cache=self.padding_cache)
            codes = self.state.frames(steps, start // SAMPLES_PER_STEP)
        else:  # the first frames (less context than the window) and the padded last one
            codes = self.state.frames(self.state.conv_steps(window, start - low), start // SAMPLES_PER_STEP)
        self.frames_out += 1
        keep_from = max(0, self.frames_out * SAMPLES_PER_FRAME - self.context)  # the next frame's context
        self.buffer = self.buffer[keep_from - self.buffer_start :]
        self.buffer_start = keep_from
        return codes[:1].cpu().numpy()

    def close(self) -> None:
        """Free the keys/values (``reset`` makes new ones)."""
        if self.state is not None:
            self.state.close()
            self.state = None
        self.graph = None


def _seanet_padding_cache(mimi):
    """A fresh padding cache for the SEANet's causal convolutions (as ``MimiModel.encode`` builds one
    with ``use_streaming=True``, without the downsampling layer, whose state ``EncoderState`` keeps)."""
    from transformers.models.mimi.modeling_mimi import MimiConv1dPaddingCache

    convs = [mimi.encoder.get_submodule(name) for name in mimi.encoder._mimiconv1d_layer_names]
    return MimiConv1dPaddingCache(
        num_layers=len(convs),
        per_layer_padding=[c.padding_total for c in convs],
        per_layer_padding_mode=[c.pad_mode for c in convs],
        per_layer_in_channels=[c.in_channels for c in convs],
    )


def _codes(frames: list[np.ndarray]) -> np.ndarray:
    if not frames:
        return np.zeros((0, NUM_CODEBOOKS), np.int64)
    return np.concatenate(frames).astype(np.int64)


class StreamingDecoder:
    """Code frames (n, 16) in, 24 kHz samples (n * 1920) out, through the engine's decoder runner."""

    def __init__(self, runner, graphs: bool = False):
        self.runner = runner  # a ``core.nn.fast_decode.FastDecoder``
        self.stream = None
        # a CUDA graph of the one-frame step (``core.nn.live_graphs``); a guarded bf16 decoder stays eager
        self.graph: DecoderGraph | None = None
        if graphs and not runner.guarded:
            self.graph = DecoderGraph(runner.decoder)
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next frame is the first of a new clip."""
        self.stream = self.runner.stream(1)
        if self.graph is not None:
            self.graph.reset()
        self.frames_in = 0

    def push(self, codes: np.ndarray) -> np.ndarray:
        """The audio of these frames, float32, one frame at a time (1920 samples each)."""
        codes = np.asarray(codes, dtype=np.int64).reshape(-1, NUM_CODEBOOKS)
        device = next(self.runner.decoder.parameters()).device
        out = []
        for frame in codes:
            if self.graph is not None:
                out.append(self.graph.decode(torch.from_numpy(frame))[0].float().cpu().numpy())
                self.frames_in += 1
                continue
            chunk = torch.from_numpy(frame).to(device).view(1, NUM_CODEBOOKS, 1)
            out.append(self.runner.step(self.stream, chunk)[0].float().cpu().numpy())
            self.frames_in += 1
        return np.concatenate(out) if out else np.zeros(0, np.float32)

    def close(self) -> None:
        self.stream = None
        self.graph = None
