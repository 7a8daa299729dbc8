"""How the decoder runs while it trains: frozen codebooks apart, checkpointing per block, time windows.

The official decoder is codes → codebook lookup (``quantizer``) → ``pre_conv`` → ``pre_transformer``
(12.5 Hz) → ``upsample`` → ``decoder`` convolution blocks (24 kHz) → clamp. Here it is split in three:

- the codebook lookup is frozen and runs where the codebooks are kept (the CPU when
  ``frozen_off_device``), without gradients: only its output goes to the device;
- :class:`TrainableDecoder` holds the rest (what DDP wraps and the optimizer sees): ``low`` runs
  ``pre_conv`` and the transformer, ``high`` the upsampling and convolution blocks, each block through
  ``torch.utils.checkpoint`` when checkpointing is on (its activations are recomputed in the backward);
- :func:`windowed_backward` trains a long segment in windows of its convolution half: the whole
  waveform is made window by window without gradients, the losses are taken on the whole waveform,
  and their gradient is sent back window by window, each window recomputed with enough left context
  to cover the convolutions' receptive field (:func:`conv_context_frames`). The transformer half runs
  once on the whole segment. So the gradient equals the whole segment's, while the memory of the
  high-rate activations is bounded by one window.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

TRAINED_PARTS = ("pre_conv", "pre_transformer", "upsample", "decoder")  # the decoder's attributes trained here


class TrainableDecoder(nn.Module):
    """The decoder without its codebooks; its state_dict keys are the decoder's own (export loads them back)."""

    pre_conv: Any
    pre_transformer: Any
    upsample: Any
    decoder: Any

    def __init__(self, decoder, checkpointing: bool = False):
        super().__init__()
        for name in TRAINED_PARTS:
            setattr(self, name, getattr(decoder, name))
        self.checkpointing = checkpointing
        self.samples_per_frame = int(decoder.total_upsample)  # 1920 at 24 kHz, 3840 at 48 kHz

    def forward(self, mode: str, x: Any = None) -> torch.Tensor:
        if mode == "low":
            return self.low(x)
        if mode == "high":
            return self.high(x)
        if mode == "whole":
            return self.high(self.low(x))
        if mode == "touch":  # every trained parameter, times zero: the pass DDP synchronises on
            return torch.stack([p.reshape(-1)[0] * 0.0 for p in self.parameters() if p.requires_grad]).sum()
        raise ValueError(mode)

    def low(self, embedded: torch.Tensor) -> torch.Tensor:
        """(B, codebook_dim, T) code embeddings → (B, latent_dim, T) at 12.5 Hz."""
        hidden = self.pre_conv(embedded).transpose(1, 2)
        hidden = self.pre_transformer(inputs_embeds=hidden).last_hidden_state
        return hidden.permute(0, 2, 1)

    def _run(self, module, hidden):
        if self.checkpointing and torch.is_grad_enabled():
            return checkpoint(module, hidden, use_reentrant=False)
        return module(hidden)

    def high(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, latent_dim, T) → (B, 1, T × 1920) waveform in [-1, 1]."""
        for stage in self.upsample:
            hidden = self._run(_Sequence(stage), hidden)
        for block in self.decoder:
            hidden = self._run(block, hidden)
        return hidden.clamp(min=-1, max=1)


class _Sequence(nn.Module):
    """One upsampling stage (a ModuleList) as a callable module."""

    layers: Any

    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, hidden):
        for layer in self.layers:
            hidden = layer(hidden)
        return hidden


def embed(quantizer, codes: torch.Tensor, device: str) -> torch.Tensor:
    """The frozen codebook lookup of ``codes`` (B, 16, T) where the codebooks are, then on ``device``."""
    where = next(quantizer.parameters()).device
    with torch.no_grad():
        return quantizer.decode(codes.to(where)).float().to(device)


def conv_context_frames(trainable: Any) -> int:
    """Code frames of left context that cover the receptive field of the convolution half (an upper
    bound, from the layers' kernels, dilations and strides, all causal)."""
    rate, steps = 1, 0  # steps of the current layer's rate per code frame; steps of history needed
    modules = [m for stage in trainable.upsample for m in stage.modules()] + [m for m in trainable.decoder.modules()]
    for module in modules:
        if isinstance(module, nn.ConvTranspose1d):
            stride = module.stride[0]
            steps = (steps + math.ceil(module.kernel_size[0] / stride)) * stride  # output t reads inputs ≤ t/stride
            rate *= stride
        elif isinstance(module, nn.Conv1d):
            steps += (module.kernel_size[0] - 1) * module.dilation[0]
    return math.ceil(steps / max(rate, 1)) + 1


def windows(frames: int, window: int, context: int):
    """(start with context, start, end) in frames for each window of a segment of ``frames``."""
    for start in range(0, frames, window):
        yield max(0, start - context), start, min(frames, start + window)


def high_in_windows(trainable: Any, hidden: torch.Tensor, window: int, context: int) -> torch.Tensor:
    """The waveform of ``hidden`` made window by window, without gradients (memory: one window)."""
    parts, spf = [], trainable.samples_per_frame
    with torch.no_grad():
        for a, s, e in windows(hidden.shape[-1], window, context):
            out = trainable.high(hidden[..., a:e])
            parts.append(out[..., (s - a) * spf :].float())
    return torch.cat(parts, dim=-1)


def windowed_backward(trainable, embedded, losses, backward, window: int, context: int, autocast):
    """One training pass of a segment with the convolution half in windows. ``losses(wav)`` → (total,
    parts) on the whole waveform; ``backward(tensor)`` runs a scaled backward of the total (GradScaler).
    Returns (total, parts, wav); the gradients are in the trained parameters."""
    with autocast:
        hidden = trainable.low(embedded)
        wav = high_in_windows(trainable, hidden.detach(), window, context)
    wav.requires_grad_(True)
    total, parts = losses(wav)
    backward(total)
    wav_grad, spf = wav.grad, trainable.samples_per_frame
    assert wav_grad is not None  # the losses depend on the waveform
    hidden_grad = torch.zeros_like(hidden, dtype=torch.float32)
    for a, s, e in windows(hidden.shape[-1], window, context):
        piece = hidden.detach()[..., a:e].requires_grad_(True)
        with autocast:
            out = trainable.high(piece)[..., (s - a) * spf :]
        out.float().backward(wav_grad[..., s * spf : e * spf])
        hidden_grad[..., a:e] += piece.grad.float()  # type: ignore[union-attr]
    hidden.backward(hidden_grad.to(hidden.dtype))
    return total, parts, wav.detach()


def freeze(decoder, trainable: Any, transformer: bool, blocks: int) -> None:
    """Codebooks always frozen; the transformer (with its input conv) and the first ``blocks``
    convolution blocks when asked."""
    for p in decoder.quantizer.parameters():
        p.requires_grad_(False)
    if transformer:
        for p in list(trainable.pre_conv.parameters()) + list(trainable.pre_transformer.parameters()):
            p.requires_grad_(False)
    for module in list(trainable.decoder)[: blocks + 1 if blocks else 0]:  # the input conv, then N blocks
        for p in module.parameters():
            p.requires_grad_(False)
