"""The decode path: codes (frames, 16) -> a float32 waveform at the decoder's own rate (1,920 samples a
frame at 24 kHz, 3,840 for the 48 kHz decoder: ``samples_per_frame``), streamed chunk by chunk with audio
equal to a whole-utterance decode.

The decoder is causal: a sliding-window transformer (72 frames) and causal convolutions.
``decode`` carries each layer's left state from chunk to chunk (the last inputs of every causal
convolution, the previous frame of every transposed convolution, the last 71 keys and values of
every attention layer) and uses absolute positions, so its output equals a whole-utterance
decode up to float rounding, at bounded memory and with no recomputed context. The official
``chunked_decode`` instead re-decodes 25 frames of context per 300-frame chunk (fewer than the
72-frame window), so its seams differ; ``decode_official`` keeps it for comparison.

These functions run under the caller's ``torch.inference_mode()``; SnakeBeta activations go
through the fused kernel of ``core.nn.kernels`` on a GPU.
"""

from __future__ import annotations

import torch

from core.codec import Progress, ceil_div
from core.nn import conv_layout
from core.nn.kernels import snake_beta


def samples_per_frame(decoder) -> int:
    """Output samples ``decoder`` makes per code frame: the product of its upsampling blocks (the
    official ``total_upsample``): 1,920 for the published 24 kHz decoder, 3,840 for the 48 kHz one."""
    return int(decoder.total_upsample)


def decode_whole(model, codes: torch.Tensor) -> torch.Tensor:
    """The whole-utterance reference decode: one forward pass over all frames (memory grows)."""
    return model.decoder(codes.T[None].to(next(model.parameters()).device)).reshape(-1)


def decode_official(model, codes: torch.Tensor, chunk_frames: int = 300, left_context: int = 25) -> torch.Tensor:
    """The official ``chunked_decode`` (independent chunks with 25 frames of re-decoded context)."""
    wav = model.decoder.chunked_decode(codes.T[None], chunk_size=chunk_frames, left_context_size=left_context)
    return wav.reshape(-1)[: codes.shape[0] * samples_per_frame(model.decoder)]


def decode(
    model, codes: torch.Tensor, chunk_frames: int = 300, on_progress: Progress | None = None, runner=None
) -> torch.Tensor:
    """Decode codes of shape (frames, 16) to a float32 waveform of frames × ``samples_per_frame`` samples.

    Streams chunk by chunk with carried state (exact seams); the result is a CPU tensor, filled
    chunk by chunk, so device memory does not grow with the clip's length. ``runner`` (a
    ``core.nn.fast_decode.FastDecoder``) supplies the stream and runs each chunk (precision, compiled
    graphs, the bf16 guard); without one the model's own decoder runs eagerly.
    """
    return decode_batch(model, [codes], chunk_frames, on_progress, runner)[0]


def decode_batch(
    model, codes_list: list[torch.Tensor], chunk_frames: int = 300, on_progress: Progress | None = None, runner=None
) -> list[torch.Tensor]:
    """Decode several code sequences together (padded with code 0 at the end; the decoder is causal,
    so padding never reaches a sequence's own samples); each result has frames × ``samples_per_frame``."""
    device = next(model.parameters()).device
    per_frame = samples_per_frame(model.decoder)
    lengths = [int(c.shape[0]) for c in codes_list]
    longest = max(lengths)
    codes = torch.zeros(len(codes_list), codes_list[0].shape[1], longest, dtype=torch.long, device=device)
    for i, c in enumerate(codes_list):
        codes[i, :, : lengths[i]] = c.T.to(device)
    out = torch.empty(len(codes_list), longest * per_frame, dtype=torch.float32)  # pageable host memory
    chunk_frames = max(1, int(chunk_frames))
    sink = _HostSink(out, chunk_frames * per_frame) if device.type == "cuda" else None
    stream = DecoderStream(model.decoder, len(codes_list)) if runner is None else runner.stream(len(codes_list))
    for index, start in enumerate(range(0, longest, chunk_frames)):
        end = min(start + chunk_frames, longest)
        chunk = codes[..., start:end]
        wav = stream.step(chunk)[:, 0] if runner is None else runner.step(stream, chunk)
        if sink is None:
            out[:, start * per_frame : end * per_frame].copy_(wav)
        else:
            sink.put(index, wav, start * per_frame)
        del wav
        if on_progress is not None:
            on_progress(end / longest)
    if sink is not None:
        sink.flush()
    return [out[i, : n * per_frame] for i, n in enumerate(lengths)]


class _HostSink:
    """Copies decoded chunks from the GPU into a pageable host tensor through two pinned staging
    buffers, so copies overlap the next chunk's work and no pinned memory outlives the call."""

    def __init__(self, out: torch.Tensor, chunk_samples: int):
        self.out = out
        self.staging = [
            torch.empty(out.shape[0], chunk_samples, dtype=torch.float32, pin_memory=True) for _ in range(2)
        ]
        self.pending: list[tuple | None] = [None, None]  # per slot: (event, first sample, samples)

    def _drain(self, slot: int) -> None:
        pending = self.pending[slot]
        if pending is not None:
            event, first, count = pending
            event.synchronize()
            self.out[:, first : first + count].copy_(self.staging[slot][:, :count])
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
        self.keys[layer_idx] = key_states[:, :, max(0, key_states.shape[2] - self.keep) :].clone()
        self.values[layer_idx] = value_states[:, :, max(0, value_states.shape[2] - self.keep) :].clone()
        return key_states, value_states


class DecoderStream:
    """Runs ``Qwen3TTSTokenizerV2Decoder`` chunk by chunk with the left state of every layer.

    Mirrors ``Qwen3TTSTokenizerV2Decoder.forward`` and its blocks; every causal convolution gets its
    previous inputs instead of zero padding, every transposed convolution its previous input frames,
    and the transformer its last keys and values at absolute positions.
    """

    def __init__(self, decoder, batch: int = 1, convs: conv_layout.ChannelsLastConvs | None = None):
        self.decoder = decoder
        self.batch = batch
        self.convs = convs  # run convolutions channels-last (``conv_layout``), or None for channels-first
        self.state: dict[int, torch.Tensor] = {}
        self.cache = _WindowCache(int(decoder.config.sliding_window))
        self.window = int(decoder.config.sliding_window)
        self.position = 0  # frames decoded so far

    def _with_state(self, module, x, width):
        """``x`` after the ``width`` inputs ``module`` saw last (zeros before the first chunk), in the
        layout the convolutions run in; the new last ``width`` inputs become the state."""
        prev = self.state.get(id(module))
        if self.convs is None:
            if prev is None:
                prev = x.new_zeros(x.shape[0], x.shape[1], width)
            x = torch.cat([prev, x], dim=-1)
            self.state[id(module)] = x[..., x.shape[-1] - width :].clone()  # a view would pin the whole input
            return x
        if prev is None:
            prev = conv_layout.channels_last(x.new_zeros(x.shape[0], x.shape[1], width))
        x = conv_layout.cat_time(prev, conv_layout.channels_last(x))
        self.state[id(module)] = conv_layout.tail_of(x, width)
        return x

    # causal convolution (stride 1): previous `padding` inputs instead of zeros
    def _conv(self, module, x):
        pad = int(module.padding)
        if int(module.stride) != 1:
            raise ValueError("streaming decode expects stride-1 causal convolutions")
        if pad > 0:
            x = self._with_state(module, x, pad)
        return module.conv(x) if self.convs is None else self.convs.conv(module.conv, x)

    # causal transposed convolution: previous input frames supply the overlapping tail
    def _transposed(self, module, x):
        conv = module.conv
        stride, kernel = conv.stride[0], conv.kernel_size[0]
        overlap = ceil_div(kernel, stride) - 1
        if overlap == 0:
            return (
                module(x) if self.convs is None else self.convs.transposed_steps(conv, conv_layout.channels_last(x), 0)
            )
        x_in = self._with_state(module, x, overlap)
        if self.convs is not None:
            return self.convs.transposed_steps(conv, x_in, overlap)
        return conv(x_in)[..., overlap * stride : (overlap + x.shape[-1]) * stride]

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
            Qwen3TTSTokenizerV2CausalTransConvNet,
            Qwen3TTSTokenizerV2DecoderDecoderResidualUnit,
            SnakeBeta,
        )

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
        return run_transformer_layers(tr, x, mask, positions, self.cache)

    def step(self, codes: torch.Tensor) -> torch.Tensor:
        """Decode the next frames: codes (B, 16, T) -> audio (B, 1, T × samples per frame)."""
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
        """The convolution stack (upsampling blocks and decoder blocks): hidden -> audio (B, 1, T × samples per frame).
        Tensors in, tensors out and ``self.state`` updated, so ``torch.compile`` can take it whole."""
        from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import (
            Qwen3TTSTokenizerV2CausalConvNet,
            Qwen3TTSTokenizerV2DecoderDecoderBlock,
            SnakeBeta,
        )

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


def run_transformer_layers(tr, x, mask, positions, cache):
    """The decoder transformer's layers over ``x`` (after its input projection) at ``positions`` with
    ``mask``, keys and values carried in ``cache``; its output projection (the eager and the captured
    streaming decoders share it)."""
    cos_sin = tr.rotary_emb(x, positions)
    for layer in tr.layers[: tr.config.num_hidden_layers]:
        x = layer(
            x,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            cache_position=positions[0],
            position_embeddings=cos_sin,
        )
    return tr.output_proj(tr.norm(x))
