"""Chunked model calls with bounded memory: codes equal to a whole-clip encode, audio equal to a
whole-utterance decode.

These functions take the loaded ``Qwen3TTSTokenizerV2Model`` and run under the caller's
``torch.inference_mode()``. The engine owns locking, OOM retries, pre-flight estimates and timing.

Encode (``encode``)
    The encoder is a causal SEANet convolution stack (24 kHz -> 25 Hz steps, receptive field about
    4.3k samples), a causal transformer that attends to *every* earlier step (transformers' Mimi
    builds a plain causal mask: the config's 250-step sliding window is not applied), a stride-2
    convolution (25 -> 12.5 Hz) and a per-frame residual quantizer. A long clip is encoded in spans:

    - the convolutions run on windows of ``chunk_samples`` with ``conv_context_samples(model)`` of
      real audio before each window; the steps computed from the context are dropped, so every step
      kept saw exactly the samples the whole-clip pass saw (windows start on frame boundaries, so
      every strided layer keeps its phase, and the tail gets the same right padding);
    - the transformer runs span by span with the keys and values of *all* earlier steps
      (``_KVStore``), at absolute positions, so each step attends to what it attends to in the
      whole-clip pass. The oldest keys and values beyond a device budget live in pinned host memory
      and stream back in blocks; partial attentions are merged exactly through their log-sum-exp;
    - the stride-2 convolution gets the two previous steps as context; the quantizer is per frame.

    Clips no longer than one chunk go through the official ``model.encode`` unchanged.

Decode (``decode``)
    The decoder is causal too: a sliding-window transformer (72 frames) and causal convolutions.
    ``decode`` carries each layer's left state from chunk to chunk (the last inputs of every causal
    convolution, the previous frame of every transposed convolution, the last 71 keys and values of
    every attention layer) and uses absolute positions, so its output equals a whole-utterance
    decode up to float rounding, at bounded memory and with no recomputed context. The official
    ``chunked_decode`` instead re-decodes 25 frames of context per 300-frame chunk (fewer than the
    72-frame window), so its seams differ; ``decode_official`` keeps it for comparison.

    On a GPU, every SnakeBeta activation (``x + sin(a x)^2 / b``, five elementwise passes over the
    largest tensors of the decoder in PyTorch) runs as one fused Triton kernel when Triton is
    installed: that is over half of the decode's GPU time otherwise.
"""

from __future__ import annotations

import logging
from typing import Callable

import torch
import torch.nn.functional as F

logger = logging.getLogger(__name__)

Progress = Callable[[float], None]  # on_progress(share of the job done, 0..1)

SAMPLES_PER_FRAME = 1920  # 24 kHz samples per code frame (12.5 frames/s)
SAMPLES_PER_STEP = 960  # 24 kHz samples per encoder transformer step (25 steps/s)
NUM_CODEBOOKS = 16  # codebooks the 12 Hz tokenizer keeps
DEFAULT_SPAN_STEPS = 15_000  # encoder transformer steps per span (600 s of audio)
HOST_BLOCK_STEPS = 8192  # encoder steps per block of host-resident keys/values streamed back (≈5.5 min)
DECODER_UNITS = ("quantizer", "pre_conv", "pre_transformer", "upsample", "decoder")  # decode stages


def num_frames(num_samples: int) -> int:
    """Frames the encoder emits for ``num_samples`` samples: ceil(samples / 1920)."""
    return -(-num_samples // SAMPLES_PER_FRAME)


# ---- encoder -----------------------------------------------------------------------------------
def conv_context_samples(model) -> int:
    """Left context (samples, a whole number of frames) that makes a convolution window exact.

    The SEANet's receptive field is the sum over its convolutions of (effective kernel - 1) times
    the stride accumulated before it; one more step covers the strides' rounding.
    """
    seanet = model.encoder.encoder
    field, stride = 0, 1
    for name in seanet._mimiconv1d_layer_names:
        conv = seanet.get_submodule(name)
        field += (int(conv.kernel_size) - 1) * stride
        stride *= int(conv.stride)
    return -(-(field + stride) // SAMPLES_PER_FRAME) * SAMPLES_PER_FRAME


def encode(model, wav: torch.Tensor, chunk_samples: int | None = None, *, span_steps: int = DEFAULT_SPAN_STEPS,
           kv_device_bytes: int | None = None, host_block_steps: int = HOST_BLOCK_STEPS,
           on_progress: Progress | None = None) -> torch.Tensor:
    """Encode a mono 24 kHz waveform of shape (samples,) to codes of shape (frames, 16).

    ``wav`` may stay on the CPU: windows move to the model's device one at a time. A clip of at
    most ``chunk_samples`` (or any clip when it is None) takes the official whole-clip path.
    ``kv_device_bytes`` caps the encoder keys/values kept on the device (None: no cap); the rest
    go to host memory (pinned when the device is a GPU) and come back ``host_block_steps`` at a time.
    ``on_progress(fraction)`` is called after each window with the share of the audio done.
    """
    total = int(wav.shape[-1])
    if chunk_samples is None or total <= chunk_samples:
        device = next(model.parameters()).device
        return encode_batch(model, [wav.to(device)])[0]
    return _encode_streaming(model, wav, chunk_samples, span_steps, kv_device_bytes, host_block_steps,
                             on_progress or _no_progress)


def _no_progress(fraction: float) -> None:
    return None


def encode_batch(model, wavs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Encode several waveforms in one padded batch, as the official tokenizer does."""
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    lengths = [int(w.shape[-1]) for w in wavs]
    batch = torch.zeros(len(wavs), max(lengths), dtype=dtype, device=device)
    mask = torch.zeros(len(wavs), max(lengths), dtype=torch.long, device=device)
    for i, w in enumerate(wavs):
        batch[i, : lengths[i]] = w.to(device=device, dtype=dtype)
        mask[i, : lengths[i]] = 1
    out = model.encode(batch, mask, return_dict=True)
    return [codes.to(torch.long) for codes in out.audio_codes]


def _encode_streaming(model, wav, chunk_samples, span_steps, kv_device_bytes, host_block_steps,
                      on_progress: Progress) -> torch.Tensor:
    mimi = model.encoder
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    total = int(wav.shape[-1])
    chunk = max(SAMPLES_PER_FRAME, chunk_samples // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME)
    span = max(chunk, (span_steps * SAMPLES_PER_STEP) // chunk * chunk)  # whole windows per span
    context = conv_context_samples(model)
    steps_total = -(-total // SAMPLES_PER_STEP)
    kv = _KVStore(mimi.encoder_transformer, steps_total, device, dtype, kv_device_bytes, host_block_steps)
    num_q = int(getattr(model, "encoder_valid_num_quantizers", NUM_CODEBOOKS))
    codes, tail = [], None  # tail: the last two transformer outputs (context of the stride-2 conv)
    logger.debug("streaming encode: %d samples, window %d, span %d, context %d", total, chunk, span, context)
    for span_start in range(0, total, span):
        span_end = min(span_start + span, total)
        pieces = []
        for start in range(span_start, span_end, chunk):
            end = min(start + chunk, span_end)
            low = max(0, start - context)
            window = wav[low:end].to(device=device, dtype=dtype, non_blocking=True)
            embedded = mimi.encoder(window[None, None])
            pieces.append(embedded[..., (start - low) // SAMPLES_PER_STEP:])
            del window, embedded
            on_progress(end / total)
        steps = torch.cat(pieces, dim=-1) if len(pieces) > 1 else pieces[0]
        del pieces
        hidden = _encoder_transformer_span(mimi.encoder_transformer, steps.transpose(1, 2), kv,
                                           span_start // SAMPLES_PER_STEP).transpose(1, 2)
        if tail is None:
            down = mimi.downsample(hidden)
        else:
            down = mimi.downsample(torch.cat([tail, hidden], dim=-1))[..., tail.shape[-1] // 2:]
        tail = hidden[..., -2:].clone()
        codes.append(mimi.quantizer.encode(down, num_q)[:, 0])  # (codebooks, frames)
    kv.close()
    out = torch.cat(codes, dim=-1)[:num_q].T.to(torch.long)
    return out[: num_frames(total)]


def _encoder_transformer_span(transformer, hidden: torch.Tensor, kv: "_KVStore", position: int) -> torch.Tensor:
    """Mimi's transformer layers on steps [position, position + len) with all earlier steps in ``kv``.

    Mirrors ``MimiTransformerLayer.forward`` (pre-norm attention and MLP with layer scales);
    ``tests/core/test_streaming.py`` checks it against the whole-clip encode.
    """
    from transformers.models.mimi.modeling_mimi import apply_rotary_pos_emb

    batch, length, _ = hidden.shape
    positions = torch.arange(position, position + length, device=hidden.device)[None]
    for index, layer in enumerate(transformer.layers):
        attn = layer.self_attn
        x = layer.input_layernorm(hidden)
        q = attn.q_proj(x).view(batch, length, attn.num_heads, attn.head_dim).transpose(1, 2)
        k = attn.k_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
        v = attn.v_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
        cos, sin = attn.rotary_emb(v, positions)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        out = kv.attend(index, q, k, v, attn.scaling, attn.num_key_value_groups)
        kv.append(index, k, v)
        out = attn.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
        hidden = hidden + layer.self_attn_layer_scale(out)
        hidden = hidden + layer.mlp_layer_scale(layer.mlp(layer.post_attention_layernorm(hidden)))
    kv.advance(length)
    return hidden


def _repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def attention_with_lse(q, k, v, scale: float, causal: bool):
    """Softmax attention and its log-sum-exp per query: (out (B,H,L,D), lse (B,H,L) float32).

    ``causal`` masks key j > query i (square blocks only). Uses the fused kernels that
    ``scaled_dot_product_attention`` dispatches to (memory-efficient on CUDA, flash on CPU) and
    falls back to plain matmuls where they do not apply.
    """
    length = q.shape[-2]
    try:
        if q.is_cuda:
            out, lse, *_ = torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, causal, scale=scale)
            return out, lse[..., :length].float()
        if q.dtype == torch.float32:
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
            return out, lse.float()
    except RuntimeError as e:  # an unsupported shape or dtype: use plain matmuls
        if "out of memory" in str(e).lower():
            raise
        logger.debug("fused attention unavailable (%s); using matmuls", e)
    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    if causal:
        scores.masked_fill_(torch.ones(length, k.shape[-2], dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.matmul(torch.exp(scores - lse[..., None]), v.float()).to(q.dtype)
    return out, lse


class _KVStore:
    """Keys and values of every encoder step so far, per layer, in attention layout (B, H, T, D).

    The first ``device_steps`` steps live in preallocated device buffers; later ones in pinned
    host memory, streamed back ``HOST_BLOCK_STEPS`` at a time through one staging buffer.
    """

    def __init__(self, transformer, steps_total: int, device, dtype, device_bytes: int | None,
                 host_block_steps: int = HOST_BLOCK_STEPS):
        attn = transformer.layers[0].self_attn
        self.layers = len(transformer.layers)
        self.heads, self.head_dim = attn.num_key_value_heads, attn.head_dim
        self.device, self.dtype = torch.device(device), dtype
        per_step = 2 * self.layers * self.heads * self.head_dim * torch.empty((), dtype=dtype).element_size()
        cap = steps_total if device_bytes is None else max(0, device_bytes // per_step)
        self.device_steps = min(steps_total, cap)
        self.host_steps = steps_total - self.device_steps
        shape = (1, self.heads, self.device_steps, self.head_dim)
        self.k = [torch.empty(shape, device=device, dtype=dtype) for _ in range(self.layers)]
        self.v = [torch.empty(shape, device=device, dtype=dtype) for _ in range(self.layers)]
        self.hk = self.hv = self.stage = None
        if self.host_steps:
            logger.info("encoder keys/values: %d steps on %s, %d in pinned host memory",
                        self.device_steps, device, self.host_steps)
            hshape = (1, self.heads, self.host_steps, self.head_dim)
            pin = self.device.type == "cuda"
            self.hk = [torch.empty(hshape, dtype=dtype, pin_memory=pin) for _ in range(self.layers)]
            self.hv = [torch.empty(hshape, dtype=dtype, pin_memory=pin) for _ in range(self.layers)]
            block = max(1, min(host_block_steps, self.host_steps))
            self.stage = (torch.empty((1, self.heads, block, self.head_dim), device=device, dtype=dtype),
                          torch.empty((1, self.heads, block, self.head_dim), device=device, dtype=dtype))
        self.filled = 0  # steps stored (all layers)

    def attend(self, layer: int, q, k_new, v_new, scale: float, groups: int) -> torch.Tensor:
        """Attention of the new steps' queries over every stored step plus the new steps (causal)."""
        if self.filled == 0:
            return F.scaled_dot_product_attention(q, _repeat_kv(k_new, groups), _repeat_kv(v_new, groups),
                                                  is_causal=True, scale=scale)
        length = k_new.shape[2]
        if self.filled + length <= self.device_steps:
            # everything fits on the device: one fused kernel over [past | new] with the causal
            # diagonal aligned bottom-right, as the whole-clip pass attends (no partial merges)
            from torch.nn.attention.bias import causal_lower_right

            end = self.filled + length
            self.k[layer][:, :, self.filled:end].copy_(k_new)
            self.v[layer][:, :, self.filled:end].copy_(v_new)
            return F.scaled_dot_product_attention(q, _repeat_kv(self.k[layer][:, :, :end], groups),
                                                  _repeat_kv(self.v[layer][:, :, :end], groups),
                                                  attn_mask=causal_lower_right(q.shape[2], end), scale=scale)
        parts = []
        on_device = min(self.filled, self.device_steps)
        if on_device:
            parts.append(attention_with_lse(q, _repeat_kv(self.k[layer][:, :, :on_device], groups),
                                            _repeat_kv(self.v[layer][:, :, :on_device], groups), scale, False))
        on_host = max(0, self.filled - self.device_steps)
        for low in range(0, on_host, self.stage[0].shape[2] if on_host else 1):
            high = min(low + self.stage[0].shape[2], on_host)
            ks = self.stage[0][:, :, : high - low]
            vs = self.stage[1][:, :, : high - low]
            ks.copy_(self.hk[layer][:, :, low:high], non_blocking=True)
            vs.copy_(self.hv[layer][:, :, low:high], non_blocking=True)
            parts.append(attention_with_lse(q, _repeat_kv(ks, groups), _repeat_kv(vs, groups), scale, False))
        parts.append(attention_with_lse(q, _repeat_kv(k_new, groups), _repeat_kv(v_new, groups), scale, True))
        return merge_attention(parts)

    def append(self, layer: int, k, v) -> None:
        """Store the new steps' keys and values of ``layer`` (``advance`` moves the fill mark)."""
        start, length = self.filled, k.shape[2]
        split = max(0, min(length, self.device_steps - start))
        written = 0 < start and start + length <= self.device_steps  # ``attend`` stored them already
        if split and not written:
            self.k[layer][:, :, start:start + split].copy_(k[:, :, :split])
            self.v[layer][:, :, start:start + split].copy_(v[:, :, :split])
        if split < length:
            low = start + split - self.device_steps
            self.hk[layer][:, :, low:low + length - split].copy_(k[:, :, split:], non_blocking=True)
            self.hv[layer][:, :, low:low + length - split].copy_(v[:, :, split:], non_blocking=True)

    def advance(self, steps: int) -> None:
        self.filled += steps

    def close(self) -> None:
        if self.hk is not None and self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()  # pending copies into pinned memory
        self.k = self.v = self.hk = self.hv = self.stage = None


def merge_attention(parts) -> torch.Tensor:
    """Exact softmax attention over the union of key sets from per-set (out, lse) pairs."""
    lse = torch.logsumexp(torch.stack([p[1] for p in parts]), dim=0)
    out = None
    for part, part_lse in parts:
        term = part.float() * torch.exp(part_lse - lse)[..., None]
        out = term if out is None else out.add_(term)
    return out.to(parts[0][0].dtype)


# ---- decoder -----------------------------------------------------------------------------------
_SNAKE_KERNEL = None  # the compiled Triton kernel, False when Triton is unavailable
SNAKE_BLOCK = 1024  # elements per Triton program of the fused SnakeBeta


def _snake_kernel():
    """The fused SnakeBeta Triton kernel, or None where Triton cannot be imported."""
    global _SNAKE_KERNEL
    if _SNAKE_KERNEL is None:
        try:
            import triton
            import triton.language as tl
        except Exception:  # no Triton: the module's own forward is used
            _SNAKE_KERNEL = False
            return None

        @triton.jit
        def snake(x_ptr, a_ptr, ib_ptr, out_ptr, n, channels, length, stride_b, stride_c, stride_t,
                  BLOCK: tl.constexpr):
            offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            t = offs % length
            c = (offs // length) % channels
            b = offs // (length * channels)
            x = tl.load(x_ptr + b * stride_b + c * stride_c + t * stride_t, mask=mask, other=0.0).to(tl.float32)
            a = tl.load(a_ptr + c, mask=mask, other=0.0)
            ib = tl.load(ib_ptr + c, mask=mask, other=0.0)
            s = tl.sin(x * a)
            tl.store(out_ptr + offs, (x + ib * (s * s)).to(out_ptr.dtype.element_ty), mask=mask)

        _SNAKE_KERNEL = snake
    return _SNAKE_KERNEL or None


def snake_beta(module, x: torch.Tensor) -> torch.Tensor:
    """``SnakeBeta`` (x + sin(x * e^alpha)^2 / (e^beta + eps)) in one pass on CUDA, else the module."""
    if torch.compiler.is_compiling():  # inside a compiled decoder Inductor fuses the module's own ops
        return module(x)
    kernel = _snake_kernel() if x.is_cuda and x.dim() == 3 else None
    if kernel is None:
        return module(x)
    a = torch.exp(module.alpha.float())
    inv_b = 1.0 / (torch.exp(module.beta.float()) + module.no_div_by_zero)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    try:
        kernel[(triton_cdiv(n, SNAKE_BLOCK),)](x, a, inv_b, out, n, x.shape[1], x.shape[2], x.stride(0), x.stride(1),
                                              x.stride(2), BLOCK=SNAKE_BLOCK)
    except Exception as e:  # e.g. no C compiler for Triton's launcher: use the module from now on
        if "out of memory" in str(e).lower():
            raise
        global _SNAKE_KERNEL
        _SNAKE_KERNEL = False
        logger.warning("fused SnakeBeta unavailable (%s: %s); using the unfused module", type(e).__name__, e)
        return module(x)
    return out


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def decode_whole(model, codes: torch.Tensor) -> torch.Tensor:
    """The whole-utterance reference decode: one forward pass over all frames (memory grows)."""
    return model.decoder(codes.T[None].to(next(model.parameters()).device)).reshape(-1)


def decode_official(model, codes: torch.Tensor, chunk_frames: int = 300, left_context: int = 25) -> torch.Tensor:
    """The official ``chunked_decode`` (independent chunks with 25 frames of re-decoded context)."""
    wav = model.decoder.chunked_decode(codes.T[None], chunk_size=chunk_frames, left_context_size=left_context)
    return wav.reshape(-1)[: codes.shape[0] * SAMPLES_PER_FRAME]


def decode(model, codes: torch.Tensor, chunk_frames: int = 300, on_progress: Progress | None = None,
           runner=None) -> torch.Tensor:
    """Decode codes of shape (frames, 16) to a float32 waveform of frames * 1920 samples.

    Streams chunk by chunk with carried state (exact seams); the result is a CPU tensor, filled
    chunk by chunk, so device memory does not grow with the clip's length. ``runner`` (a
    ``core.fast_decode.FastDecoder``) supplies the stream and runs each chunk (precision, compiled
    graphs, the bf16 guard); without one the model's own decoder runs eagerly.
    """
    return decode_batch(model, [codes], chunk_frames, on_progress, runner)[0]


def decode_batch(model, codes_list: list[torch.Tensor], chunk_frames: int = 300,
                 on_progress: Progress | None = None, runner=None) -> list[torch.Tensor]:
    """Decode several code sequences together (padded with code 0 at the end; the decoder is causal,
    so padding never reaches a sequence's own samples); each result has frames * 1920 samples."""
    device = next(model.parameters()).device
    lengths = [int(c.shape[0]) for c in codes_list]
    longest = max(lengths)
    codes = torch.zeros(len(codes_list), codes_list[0].shape[1], longest, dtype=torch.long, device=device)
    for i, c in enumerate(codes_list):
        codes[i, :, : lengths[i]] = c.T.to(device)
    out = torch.empty(len(codes_list), longest * SAMPLES_PER_FRAME, dtype=torch.float32)  # pageable host memory
    chunk_frames = max(1, int(chunk_frames))
    sink = _HostSink(out, chunk_frames * SAMPLES_PER_FRAME) if device.type == "cuda" else None
    stream = DecoderStream(model.decoder, len(codes_list)) if runner is None else runner.stream(len(codes_list))
    for index, start in enumerate(range(0, longest, chunk_frames)):
        end = min(start + chunk_frames, longest)
        chunk = codes[..., start:end]
        wav = stream.step(chunk)[:, 0] if runner is None else runner.step(stream, chunk)
        if sink is None:
            out[:, start * SAMPLES_PER_FRAME: end * SAMPLES_PER_FRAME].copy_(wav)
        else:
            sink.put(index, wav, start * SAMPLES_PER_FRAME)
        del wav
        if on_progress is not None:
            on_progress(end / longest)
    if sink is not None:
        sink.flush()
    return [out[i, : n * SAMPLES_PER_FRAME] for i, n in enumerate(lengths)]


class _HostSink:
    """Copies decoded chunks from the GPU into a pageable host tensor through two pinned staging
    buffers, so copies overlap the next chunk's work and no pinned memory outlives the call."""

    def __init__(self, out: torch.Tensor, chunk_samples: int):
        self.out = out
        self.staging = [torch.empty(out.shape[0], chunk_samples, dtype=torch.float32, pin_memory=True)
                        for _ in range(2)]
        self.pending: list[tuple | None] = [None, None]  # per slot: (event, first sample, samples)

    def _drain(self, slot: int) -> None:
        if self.pending[slot] is not None:
            event, first, count = self.pending[slot]
            event.synchronize()
            self.out[:, first:first + count].copy_(self.staging[slot][:, :count])
            self.pending[slot] = None

    def put(self, index: int, wav: torch.Tensor, first: int) -> None:
        slot = index % 2
        self._drain(slot)
        count = wav.shape[-1]
        self.staging[slot][:, :count].copy_(wav, non_blocking=True)  # casts bf16 to float32 on the way
        event = torch.cuda.Event()
        event.record()
        self.pending[slot] = (event, first, count)

    def flush(self) -> None:
        for slot in (0, 1):
            self._drain(slot)


class _WindowCache:
    """The ``Cache`` interface the decoder's attention layers call: returns past + new keys and
    values, and keeps only the last ``window - 1`` steps (all a sliding window of ``window`` needs)."""

    def __init__(self, window: int):
        self.keep = max(0, window - 1)
        self.keys: dict[int, torch.Tensor] = {}
        self.values: dict[int, torch.Tensor] = {}

    def past(self, layer: int) -> int:
        return 0 if layer not in self.keys else self.keys[layer].shape[2]

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        if layer_idx in self.keys:
            key_states = torch.cat([self.keys[layer_idx], key_states], dim=2)
            value_states = torch.cat([self.values[layer_idx], value_states], dim=2)
        self.keys[layer_idx] = key_states[:, :, max(0, key_states.shape[2] - self.keep):].clone()
        self.values[layer_idx] = value_states[:, :, max(0, value_states.shape[2] - self.keep):].clone()
        return key_states, value_states


class DecoderStream:
    """Runs ``Qwen3TTSTokenizerV2Decoder`` chunk by chunk with the left state of every layer.

    Mirrors ``Qwen3TTSTokenizerV2Decoder.forward`` and its blocks; every causal convolution gets its
    previous inputs instead of zero padding, every transposed convolution its previous input frames,
    and the transformer its last keys and values at absolute positions.
    """

    def __init__(self, decoder, batch: int = 1):
        self.decoder = decoder
        self.batch = batch
        self.state: dict[int, torch.Tensor] = {}
        self.cache = _WindowCache(int(decoder.config.sliding_window))
        self.window = int(decoder.config.sliding_window)
        self.position = 0  # frames decoded so far

    # causal convolution (stride 1): previous `padding` inputs instead of zeros
    def _conv(self, module, x):
        pad = int(module.padding)
        if int(module.stride) != 1:
            raise ValueError("streaming decode expects stride-1 causal convolutions")
        if pad == 0:
            return module.conv(x)
        prev = self.state.get(id(module))
        if prev is None:
            prev = x.new_zeros(x.shape[0], x.shape[1], pad)
        x = torch.cat([prev, x], dim=-1)
        self.state[id(module)] = x[..., x.shape[-1] - pad:].clone()  # a view would pin the whole input
        return module.conv(x)

    # causal transposed convolution: previous input frames supply the overlapping tail
    def _transposed(self, module, x):
        conv = module.conv
        stride, kernel = conv.stride[0], conv.kernel_size[0]
        overlap = -(-kernel // stride) - 1
        if overlap == 0:
            return module(x)
        prev = self.state.get(id(module))
        if prev is None:
            prev = x.new_zeros(x.shape[0], x.shape[1], overlap)
        x_in = torch.cat([prev, x], dim=-1)
        self.state[id(module)] = x_in[..., x_in.shape[-1] - overlap:].clone()
        y = conv(x_in)
        return y[..., overlap * stride: (overlap + x.shape[-1]) * stride]

    def _convnext(self, block, x):
        residual = x
        x = self._conv(block.dwconv, x).permute(0, 2, 1)
        x = block.pwconv2(block.act(block.pwconv1(block.norm(x))))
        return residual + (block.gamma * x).permute(0, 2, 1)

    def _residual_unit(self, unit, x):
        y = self._conv(unit.conv1, snake_beta(unit.act1, x))
        return x + self._conv(unit.conv2, snake_beta(unit.act2, y))

    def _decoder_block(self, block, x):
        from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import (
            Qwen3TTSTokenizerV2CausalTransConvNet, Qwen3TTSTokenizerV2DecoderDecoderResidualUnit, SnakeBeta)

        for layer in block.block:
            if isinstance(layer, Qwen3TTSTokenizerV2CausalTransConvNet):
                x = self._transposed(layer, x)
            elif isinstance(layer, Qwen3TTSTokenizerV2DecoderDecoderResidualUnit):
                x = self._residual_unit(layer, x)
            elif isinstance(layer, SnakeBeta):
                x = snake_beta(layer, x)
            else:
                x = layer(x)
        return x

    def _transformer(self, hidden):
        tr = self.decoder.pre_transformer
        x = tr.input_proj(hidden)
        length = x.shape[1]
        past = self.cache.past(0)
        positions = torch.arange(self.position, self.position + length, device=x.device)[None]
        query = positions[0, :, None]
        key = torch.arange(self.position - past, self.position + length, device=x.device)[None, :]
        mask = ((key <= query) & (key > query - self.window))[None, None]
        cos_sin = tr.rotary_emb(x, positions)
        for layer in tr.layers[: tr.config.num_hidden_layers]:
            x = layer(x, attention_mask=mask, position_ids=positions, past_key_values=self.cache,
                      use_cache=True, cache_position=positions[0], position_embeddings=cos_sin)
        return tr.output_proj(tr.norm(x))

    def step(self, codes: torch.Tensor) -> torch.Tensor:
        """Decode the next frames: codes (B, 16, T) -> audio (B, 1, T * 1920)."""
        out = self.tail(self.head(codes))
        self.position += codes.shape[-1]
        return out

    def head(self, codes: torch.Tensor) -> torch.Tensor:
        """Quantizer, first convolution and transformer: codes (B, 16, T) -> hidden (B, C, T)."""
        dec = self.decoder
        hidden = dec.quantizer.decode(codes)
        hidden = self._conv(dec.pre_conv, hidden).transpose(1, 2)
        return self._transformer(hidden).permute(0, 2, 1)

    def tail(self, hidden: torch.Tensor) -> torch.Tensor:
        """The convolution stack (upsampling blocks and decoder blocks): hidden -> audio (B, 1, T * 1920).
        Tensors in, tensors out and ``self.state`` updated, so ``torch.compile`` can take it whole."""
        from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import (
            Qwen3TTSTokenizerV2CausalConvNet, Qwen3TTSTokenizerV2DecoderDecoderBlock, SnakeBeta)

        dec = self.decoder
        for transposed, convnext in dec.upsample:
            hidden = self._convnext(convnext, self._transposed(transposed, hidden))
        for layer in dec.decoder:
            if isinstance(layer, Qwen3TTSTokenizerV2CausalConvNet):
                hidden = self._conv(layer, hidden)
            elif isinstance(layer, Qwen3TTSTokenizerV2DecoderDecoderBlock):
                hidden = self._decoder_block(layer, hidden)
            elif isinstance(layer, SnakeBeta):
                hidden = snake_beta(layer, hidden)
            else:
                hidden = layer(hidden)
        return hidden.clamp(min=-1, max=1)
