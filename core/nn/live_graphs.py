"""A live session's per-frame encode and decode as CUDA graphs: one replay per 80 ms frame.

The eager streaming step (``core.nn.streaming``) launches ≈1,500 kernels per frame and builds new
tensors for every state it carries; on a GPU its time is launches and Python, not arithmetic
(docs/live.md). Here each step is captured once per session, with static shapes and every state in a
preallocated buffer that the graph updates in place:

- :class:`EncoderGraph`: the SEANet over a fixed window (the frame's 1,920 samples after
  ``conv_context_samples`` of real audio), the transformer's two new steps with their keys and values
  written into the session's ``KVStore`` buffers at the frame's position (an index held on the device)
  and attention over the preallocated keys up to the next multiple of ``KEY_BUCKET_STEPS`` (one graph
  per bucket, captured when a session first reaches it), with the keys past the frame masked out (a masked
  key adds an exact zero to the softmax sums; plain matmuls and a softmax, which spread over the keys,
  where the fused kernel with two queries walks them one block at a time: 1.8 ms a layer at 15,000
  keys on an H200), the stride-2 convolution with its two-step tail, and the quantizer. Frames before the window is full of real audio, and the padded last frame, run
  eagerly through the same ``EncoderState``, so both paths share one set of keys/values.
- :class:`GraphDecoderStream`: ``core.nn.decoding.DecoderStream`` with every convolution's left state
  in a fixed buffer (``cat`` then ``copy_`` of the tail, in place) and the transformer's sliding window
  as a fixed 72-step shift buffer per layer, masked for the first frames; its one-frame step is
  captured by :class:`DecoderGraph`.

Numerics: the same modules, weights and backend flags as the eager step (captured under the
operation's flags); attention runs over longer, masked key sets, so results can differ from the eager
step by float rounding only. Codes are compared with the offline encode and audio with the offline
decode on the device (tests/gpu/test_gpu_live.py, bench/live_bench.py). Only the fp32 decoder
is captured: a guarded bf16 decode needs its per-chunk check and fp32 redo, so it stays eager.
"""

from __future__ import annotations

import logging

import torch

from core.codec import NUM_CODEBOOKS, SAMPLES_PER_FRAME, SAMPLES_PER_STEP
from core.nn.decoding import DecoderStream, run_transformer_layers, samples_per_frame
from core.nn.fast_decode import zero_state

logger = logging.getLogger(__name__)

KEY_BUCKET_STEPS = 512  # the encoder step attends over keys in buckets of this many steps (20.5 s): a graph each
WARM_RUNS = 2  # eager runs on a side stream before capture (cuBLAS/cuDNN handles, Triton compiles)


def _capture(step, pool=None) -> torch.cuda.CUDAGraph:
    """Warm ``step`` up on a side stream, then capture one call of it (in ``pool``, shared by graphs
    that never run at once)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARM_RUNS):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):
        step()
    return graph


class _StaticSeanet:
    """The SEANet encoder (transformers' ``MimiEncoder``) with each causal convolution's padding as
    Python integers, recorded on a first eager pass: the model's own padding is a device tensor, whose
    conversion to a pad width would synchronise (not allowed while capturing)."""

    def __init__(self, seanet):
        self.seanet = seanet
        self.pads: list[tuple[int, int]] | None = None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        from transformers.models.mimi.modeling_mimi import MimiConv1d, MimiResnetBlock

        record = self.pads is None
        pads: list[tuple[int, int]] = [] if record else list(self.pads or [])
        it = iter(pads)

        def conv(layer, h):
            if record:
                pad = (int(layer.padding_total), int(layer._get_extra_padding_for_conv1d(h)))
                pads.append(pad)
            else:
                pad = next(it)
            return layer.conv(layer._pad1d(h, pad, mode=layer.pad_mode))

        for layer in self.seanet.layers:
            if isinstance(layer, MimiConv1d):
                x = conv(layer, x)
            elif isinstance(layer, MimiResnetBlock):
                residual = x
                for inner in layer.block:
                    x = conv(inner, x) if isinstance(inner, MimiConv1d) else inner(x)
                shortcut = layer.shortcut
                residual = conv(shortcut, residual) if isinstance(shortcut, MimiConv1d) else shortcut(residual)
                x = residual + x
            else:
                x = layer(x)
        if record:
            self.pads = pads
        return x


class EncoderGraph:
    """One frame of ``EncoderState`` work as a CUDA graph (see the module docstring).

    ``state``: the session's ``core.nn.encoding.EncoderState``, whose keys/values must all live on the
    device. :meth:`encode` takes the frame's window (context + 1,920 samples) and its first step.
    """

    def __init__(self, state, capture: bool = True):
        kv = state.kv
        if kv.host_steps:
            raise ValueError("a captured encoder step needs every key/value on the device")
        self.state = state
        for buffers in (kv.k, kv.v):  # the step attends over a whole bucket of keys: the slots not written
            for layer in buffers:  # yet are masked, but a masked NaN (the allocator's leftovers) still
                layer[:, :, kv.filled :].zero_()  # poisons the product, 0 x NaN, and the frame's codes
        mimi, device, dtype = state.mimi, state.device, state.dtype
        self.window = torch.zeros(state.context + SAMPLES_PER_FRAME, device=device, dtype=dtype)
        self.position = torch.zeros(1, dtype=torch.long, device=device)  # the frame's first step
        self.offsets = torch.arange(SAMPLES_PER_FRAME // SAMPLES_PER_STEP, device=device)
        self.keys = torch.arange(kv.device_steps, device=device)
        channels = int(mimi.downsample.conv.in_channels)
        self.tail = torch.zeros(1, channels, 2, device=device, dtype=dtype)
        self.codes = torch.zeros(1, NUM_CODEBOOKS, dtype=torch.long, device=device)
        self.seanet = _StaticSeanet(mimi.encoder)
        downsample = mimi.downsample
        probe = torch.zeros(1, channels, 2 + self.offsets.numel(), device=device, dtype=dtype)
        self.down_pad = (int(downsample.padding_total), int(downsample._get_extra_padding_for_conv1d(probe)))
        self.seanet(self.window[None, None])  # records the paddings (eager, may synchronise)
        self.capture = capture  # False: the same step, eagerly (tests, CPU)
        self.length = min(KEY_BUCKET_STEPS, kv.device_steps)  # keys the step attends over (a bucket)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}  # one per key bucket, captured when first reached
        self.pool = torch.cuda.graph_pool_handle() if capture else None
        if capture:  # the first bucket now, so a session's first frames do not wait for a capture;
            self.graphs[self.length] = _capture(self._step, self.pool)  # its warm-up wrote slots the
            self.tail.zero_()  # first eager frames overwrite, and the tail, reset here

    def _step(self) -> None:
        from transformers.models.mimi.modeling_mimi import apply_rotary_pos_emb

        state, kv = self.state, self.state.kv
        mimi = state.mimi
        embedded = self.seanet(self.window[None, None])
        hidden = embedded[..., state.context // SAMPLES_PER_STEP :].transpose(1, 2)  # (1, 2, C)
        batch, length, _ = hidden.shape
        positions = (self.position + self.offsets)[None]  # (1, 2) absolute steps
        span = self.length
        visible = (self.keys[None, :span] <= positions[0][:, None])[None, None]  # (1, 1, 2, L): causal
        for index, layer in enumerate(mimi.encoder_transformer.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(hidden)
            q = attn.q_proj(x).view(batch, length, attn.num_heads, attn.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
            cos, sin = attn.rotary_emb(v, positions)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            kv.k[index].index_copy_(2, positions[0], k)
            kv.v[index].index_copy_(2, positions[0], v)
            groups = attn.num_key_value_groups
            keys, values = kv.k[index][:, :, :span], kv.v[index][:, :, :span]
            if groups > 1:
                keys, values = keys.repeat_interleave(groups, dim=1), values.repeat_interleave(groups, dim=1)
            # matmuls, not the fused kernel: with 2 queries the fused kernel runs one block per head
            # and walks every preallocated key in turn (1.8 ms a layer at 15,000 keys on an H200)
            scores = torch.matmul(q, keys.transpose(-1, -2)) * attn.scaling
            scores = scores.masked_fill(~visible, float("-inf"))
            out = torch.matmul(torch.softmax(scores, dim=-1), values)
            out = attn.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
            hidden = hidden + layer.self_attn_layer_scale(out)
            hidden = hidden + layer.mlp_layer_scale(layer.mlp(layer.post_attention_layernorm(hidden)))
        hidden = hidden.transpose(1, 2)
        joined = torch.cat([self.tail, hidden], dim=-1)
        down = mimi.downsample.conv(mimi.downsample._pad1d(joined, self.down_pad, mode=mimi.downsample.pad_mode))
        down = down[..., self.tail.shape[-1] // 2 :]
        self.tail.copy_(hidden[..., -2:])
        codes = mimi.quantizer.encode(down, state.num_q)[:, 0][: state.num_q].T
        self.codes[:, : codes.shape[1]].copy_(codes)

    def _run(self, position: int) -> None:
        steps = self.offsets.numel()
        bucket = -(-(position + steps) // KEY_BUCKET_STEPS) * KEY_BUCKET_STEPS
        self.length = min(bucket, self.keys.numel())
        if not self.capture:
            self._step()
            return
        graph = self.graphs.get(self.length)
        if graph is None:  # the warm-up runs the step on this very frame: keep the tail it started from
            tail = self.tail.clone()
            graph = self.graphs[self.length] = _capture(self._step, self.pool)
            self.tail.copy_(tail)
        graph.replay()

    def encode(self, window: torch.Tensor, position: int) -> torch.Tensor:
        """Codes (1, 16) of the frame whose steps start at ``position``; ``window`` (host float32):
        the context and the frame's samples. Keys/values and the tail move on as the eager step's do."""
        state = self.state
        self.window.copy_(window)
        self.position.fill_(position)
        if state.tail is not self.tail:  # the eager step ran last: take its tail
            self.tail.copy_(state.tail)
        self._run(position)
        state.tail = self.tail  # the eager step reads it and replaces it with its own copy
        state.kv.advance(self.offsets.numel())
        return self.codes[:, : state.num_q]


class _ShiftWindowCache:
    """The decoder's sliding-window keys/values in fixed buffers of ``window`` steps per layer: each
    update shifts one step out and the new one in (in place); slots before the first frame are masked."""

    def __init__(self, layers: int, heads: int, head_dim: int, window: int, device, dtype):
        self.keys = [torch.zeros(1, heads, window, head_dim, device=device, dtype=dtype) for _ in range(layers)]
        self.values = [torch.zeros(1, heads, window, head_dim, device=device, dtype=dtype) for _ in range(layers)]

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        keys, values = self.keys[layer_idx], self.values[layer_idx]
        keys.copy_(torch.cat([keys[:, :, 1:], key_states], dim=2))
        values.copy_(torch.cat([values[:, :, 1:], value_states], dim=2))
        return keys, values

    def past(self, layer: int) -> int:  # DecoderStream's interface; the mask does the counting here
        return self.keys[layer].shape[2] - 1


class GraphDecoderStream(DecoderStream):
    """``DecoderStream`` for one frame at a time with every state in a fixed buffer (see the module
    docstring); runs eagerly as well, so it is checked on a CPU against the ordinary stream."""

    def __init__(self, decoder):
        super().__init__(decoder, 1, None)
        param = next(decoder.parameters())
        device, dtype = param.device, param.dtype
        self.state = zero_state(decoder, 1, dtype, device)
        tr = decoder.pre_transformer
        attn = tr.layers[0].self_attn
        heads = int(attn.config.num_key_value_heads)
        self.shift = _ShiftWindowCache(tr.config.num_hidden_layers, heads, attn.head_dim, self.window, device, dtype)
        self.cache = self.shift  # type: ignore[assignment]  # the same update() interface the layers call
        self.position_t = torch.zeros(1, dtype=torch.long, device=device)
        self.slots = torch.arange(self.window, device=device)

    def _with_state(self, module, x, width):
        prev = self.state[id(module)]
        joined = torch.cat([prev, x], dim=-1)
        prev.copy_(joined[..., joined.shape[-1] - width :])
        return joined

    def _transformer(self, hidden):
        tr = self.decoder.pre_transformer
        x = tr.input_proj(hidden)
        positions = self.position_t[None]  # (1, 1)
        # slot j holds the step at position - (window - 1) + j: visible once that step exists
        mask = (self.slots + self.position_t >= self.window - 1)[None, None, None]
        return run_transformer_layers(tr, x, mask, positions, self.cache)

    def step(self, codes: torch.Tensor) -> torch.Tensor:
        if codes.shape[-1] != 1:
            raise ValueError("a GraphDecoderStream decodes one frame at a time")
        out = self.tail(self.head(codes))
        self.position_t.add_(1)
        self.position += 1
        return out


class DecoderGraph:
    """A :class:`GraphDecoderStream`'s one-frame step as a CUDA graph."""

    def __init__(self, decoder, capture: bool = True):
        self.stream = GraphDecoderStream(decoder)
        device = self.stream.position_t.device
        self.codes = torch.zeros(1, NUM_CODEBOOKS, 1, dtype=torch.long, device=device)
        out = samples_per_frame(decoder)  # 1,920 at 24 kHz, 3,840 for a 48 kHz decoder
        self.audio = torch.zeros(1, out, device=device, dtype=next(decoder.parameters()).dtype)
        self.graph = _capture(self._step) if capture else None  # None: the same step, eagerly
        self.reset()

    def _step(self) -> None:
        out = self.stream.tail(self.stream.head(self.codes))
        self.stream.position_t.add_(1)
        self.audio.copy_(out[:, 0])

    def reset(self) -> None:
        """Back to the state before a first frame (the capture's warm-up ran the step)."""
        for buffer in self.stream.state.values():
            buffer.zero_()
        for buffer in (*self.stream.shift.keys, *self.stream.shift.values):
            buffer.zero_()
        self.stream.position_t.zero_()
        self.stream.position = 0

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        """Audio (1, 1920) on the device of one frame's codes (16,)."""
        self.codes.copy_(codes.view(1, -1, 1))
        if self.graph is None:
            self._step()
        else:
            self.graph.replay()
        self.stream.position += 1
        return self.audio
