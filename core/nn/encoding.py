"""The encode path: a mono 24 kHz waveform -> codes (frames, 16), whole or in bounded-memory spans,
with codes equal to a whole-clip encode.

These functions take the loaded ``Qwen3TTSTokenizerV2Model`` and run under the caller's
``torch.inference_mode()``. The engine owns locking, OOM retries, pre-flight estimates
(``core.model.planner``) and timing.

The encoder is a causal SEANet convolution stack (24 kHz -> 25 Hz steps, receptive field about
4.3k samples), a causal transformer that attends to *every* earlier step (transformers' Mimi
builds a plain causal mask: the config's 250-step sliding window is not applied), a stride-2
convolution (25 -> 12.5 Hz) and a per-frame residual quantizer. A long clip is encoded in spans:

- the convolutions run on windows of ``chunk_samples`` with ``conv_context_samples(model)`` of
  real audio before each window; the steps computed from the context are dropped, so every step
  kept saw exactly the samples the whole-clip pass saw (windows start on frame boundaries, so
  every strided layer keeps its phase, and the tail gets the same right padding);
- the transformer runs span by span with the keys and values of *all* earlier steps
  (``core.nn.kv_cache.KVStore``), at absolute positions, so each step attends to what it attends to
  in the whole-clip pass. The oldest keys and values beyond a device budget live in pinned host
  memory and stream back in blocks; partial attentions are merged exactly through their log-sum-exp;
- the stride-2 convolution gets the two previous steps as context; the quantizer is per frame.

Clips no longer than one chunk go through the official ``model.encode`` unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from core.codec import NUM_CODEBOOKS, SAMPLES_PER_FRAME, SAMPLES_PER_STEP, Progress, ceil_div, num_frames
from core.nn.kv_cache import HOST_BLOCK_STEPS, KVStore

logger = logging.getLogger(__name__)

DEFAULT_SPAN_STEPS = 15_000  # encoder transformer steps per span (600 s of audio)
QUANTIZE_FRAMES = 500  # frames quantized at once (40 s): a piece between two hand-overs of the lock


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
    return ceil_div(field + stride, SAMPLES_PER_FRAME) * SAMPLES_PER_FRAME


def encode(
    model,
    wav: torch.Tensor,
    chunk_samples: int | None = None,
    *,
    span_steps: int = DEFAULT_SPAN_STEPS,
    kv_device_bytes: int | None = None,
    host_block_steps: int = HOST_BLOCK_STEPS,
    on_progress: Progress | None = None,
    between: Callable[[], None] | None = None,
) -> torch.Tensor:
    """Encode a mono 24 kHz waveform of shape (samples,) to codes of shape (frames, 16).

    ``wav`` may stay on the CPU: windows move to the model's device one at a time. A clip of at
    most ``chunk_samples`` (or any clip when it is None) takes the official whole-clip path.
    ``kv_device_bytes`` caps the encoder keys/values kept on the device (None: no cap); the rest
    go to host memory (pinned when the device is a GPU) and come back ``host_block_steps`` at a time.
    ``on_progress(fraction)`` is called after each window with the share of the audio done;
    ``between()`` after each window and each transformer layer of a span (the engine hands its lock
    to live frames there; nothing here depends on what it does).
    """
    total = int(wav.shape[-1])
    if chunk_samples is None or total <= chunk_samples:
        device = next(model.parameters()).device
        return encode_batch(model, [wav.to(device)])[0]
    return _encode_streaming(
        model,
        wav,
        chunk_samples,
        span_steps,
        kv_device_bytes,
        host_block_steps,
        on_progress or _no_progress,
        between or _nothing,
    )


def _no_progress(fraction: float) -> None:
    return None


def _nothing() -> None:
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


def _encode_streaming(
    model, wav, chunk_samples, span_steps, kv_device_bytes, host_block_steps, on_progress: Progress, between
) -> torch.Tensor:
    total = int(wav.shape[-1])
    chunk = max(SAMPLES_PER_FRAME, chunk_samples // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME)
    span = max(chunk, (span_steps * SAMPLES_PER_STEP) // chunk * chunk)  # whole windows per span
    state = EncoderState(model, ceil_div(total, SAMPLES_PER_STEP), kv_device_bytes, host_block_steps)
    logger.debug("streaming encode: %d samples, window %d, span %d, context %d", total, chunk, span, state.context)
    codes = []
    for span_start in range(0, total, span):
        span_end = min(span_start + span, total)
        pieces = []
        for start in range(span_start, span_end, chunk):
            end = min(start + chunk, span_end)
            low = max(0, start - state.context)
            pieces.append(state.conv_steps(wav[low:end], start - low))
            on_progress(end / total)
            between()
        steps = torch.cat(pieces, dim=-1) if len(pieces) > 1 else pieces[0]
        del pieces
        codes.append(state.frames(steps, span_start // SAMPLES_PER_STEP, between))
    state.close()
    return torch.cat(codes, dim=0)[: num_frames(total)]


class EncoderState:
    """What an encode carries from one span to the next, so spans give the whole clip's codes: the
    encoder's keys and values (``KVStore``, with the engine's offload rule) and the stride-2
    convolution's last two transformer outputs. The chunked encode above and the live encoder
    stream (``core.nn.streaming``) both run through it.

    ``steps_total``: encoder steps this state may hold (the keys/values are preallocated for them).
    """

    def __init__(self, model, steps_total: int, kv_device_bytes: int | None, host_block_steps: int = HOST_BLOCK_STEPS):
        self.mimi = model.encoder
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.context = conv_context_samples(model)
        self.num_q = int(getattr(model, "encoder_valid_num_quantizers", NUM_CODEBOOKS))
        self.kv = KVStore(
            self.mimi.encoder_transformer, steps_total, self.device, self.dtype, kv_device_bytes, host_block_steps
        )
        self.tail: torch.Tensor | None = None  # the last two transformer outputs (context of the stride-2 conv)
        self.quantize = (
            self.mimi.quantizer.encode
        )  # (embeddings, codebooks) -> codes; the live CPU step prepares its own

    def conv_steps(self, window: torch.Tensor, skip_samples: int) -> torch.Tensor:
        """The SEANet's steps (1, C, steps) of ``window`` (mono samples that start on a frame boundary),
        without the first ``skip_samples`` (the left context, a whole number of frames)."""
        window = window.to(device=self.device, dtype=self.dtype, non_blocking=True)
        embedded = self.mimi.encoder(window[None, None])
        return embedded[..., skip_samples // SAMPLES_PER_STEP :]

    def frames(self, steps: torch.Tensor, position: int, between=None) -> torch.Tensor:
        """Codes (frames, codebooks) of the SEANet steps (1, C, steps) that start at step ``position``
        (even: a frame boundary), with every earlier step in the keys/values. ``between()`` runs after
        each transformer layer and each ``QUANTIZE_FRAMES`` frames quantized (a span is long: the
        engine hands its lock to live frames there). The quantizer works frame by frame, so its
        pieces give the codes of one call (checked in tests/core/nn/test_encoding.py)."""
        mimi = self.mimi
        hidden = _encoder_transformer_span(mimi.encoder_transformer, steps.transpose(1, 2), self.kv, position, between)
        hidden = hidden.transpose(1, 2)
        if self.tail is None:
            down = mimi.downsample(hidden)
        else:
            down = mimi.downsample(torch.cat([self.tail, hidden], dim=-1))[..., self.tail.shape[-1] // 2 :]
        self.tail = hidden[..., -2:].clone()
        pieces = []
        for low in range(0, down.shape[-1], QUANTIZE_FRAMES):
            if low and between is not None:
                between()
            pieces.append(self.quantize(down[..., low : low + QUANTIZE_FRAMES], self.num_q)[:, 0][: self.num_q])
        return torch.cat(pieces, dim=-1).T.to(torch.long)

    def close(self) -> None:
        self.kv.close()


def _encoder_transformer_span(
    transformer, hidden: torch.Tensor, kv: KVStore, position: int, between=None
) -> torch.Tensor:
    """Mimi's transformer layers on steps [position, position + len) with all earlier steps in ``kv``.

    Mirrors ``MimiTransformerLayer.forward`` (pre-norm attention and MLP with layer scales);
    ``tests/core/nn/test_encoding.py`` checks it against the whole-clip encode.
    """
    from transformers.models.mimi.modeling_mimi import apply_rotary_pos_emb

    batch, length, _ = hidden.shape
    positions = torch.arange(position, position + length, device=hidden.device)[None]
    rotary: list[tuple] = []  # (module, cos, sin): Mimi gives each layer its own module, built from one config
    for index, layer in enumerate(transformer.layers):
        attn = layer.self_attn
        x = layer.input_layernorm(hidden)
        q = attn.q_proj(x).view(batch, length, attn.num_heads, attn.head_dim).transpose(1, 2)
        k = attn.k_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
        v = attn.v_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
        cos, sin = _rotary(attn.rotary_emb, v, positions, rotary)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        out = kv.attend(index, q, k, v, attn.scaling, attn.num_key_value_groups)
        kv.append(index, k, v)
        out = attn.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
        hidden = hidden + layer.self_attn_layer_scale(out)
        hidden = hidden + layer.mlp_layer_scale(layer.mlp(layer.post_attention_layernorm(hidden)))
        if between is not None:
            between()
    kv.advance(length)
    return hidden


def _rotary(module, v: torch.Tensor, positions: torch.Tensor, seen: list[tuple]) -> tuple[torch.Tensor, torch.Tensor]:
    """``module(v, positions)``, reusing the cos/sin of an earlier layer's module with the same
    frequencies and scaling (equal inputs, equal arithmetic: equal bits); once per span, not once per
    layer (0.45 ms a layer per frame on the 2-core CPU)."""
    for other, cos, sin in seen:
        if (
            other.attention_scaling == module.attention_scaling
            and other.inv_freq.shape == module.inv_freq.shape
            and torch.equal(other.inv_freq, module.inv_freq)
        ):
            return cos, sin
    cos, sin = module(v, positions)
    seen.append((module, cos, sin))
    return cos, sin
