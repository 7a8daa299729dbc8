"""Channels-last convolutions for the streaming decoder (on by default on CPU).

PyTorch runs ``conv1d`` on CPU through oneDNN as a 2-D convolution of a (B, C, 1, T) tensor, in the
channels-first layout the 1-D tensor has; oneDNN's fast kernels (AVX-512, and AMX for bfloat16) want
channels last, so every call reorders its input and output. Keeping the decoder's activations in a
channels-last layout (a (B, C, T) tensor whose channels are adjacent in memory) and running each
convolution as ``conv2d`` on a channels-last 4-D view with a channels-last weight removes those
reorders. Measured on the 2-core Intel Xeon (AMX) machine, one convolution of the decoder's last
block (96 channels, 10 s of audio, kernel 7): 279 → 170 ms in fp32, 189 → 49 ms in bf16; the
1×1 convolution 119 → 58 ms and 114 → 20 ms (``python -m bench.cpu_layout``). The same arithmetic in
another order: outputs differ from the channels-first ones by fp32 rounding (relative 1e-7).

Elementwise layers (SnakeBeta, additions, the ConvNeXt norm and linears) run the model's own modules on
the channels-last tensors; PyTorch keeps the layout through them, and the ConvNeXt permute to
(B, T, C) becomes a free view.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def channels_last(x: torch.Tensor) -> torch.Tensor:
    """``x`` (B, C, T) with its channels adjacent in memory (a copy unless it already is)."""
    if x.dim() != 3:
        raise ValueError(f"expected a (batch, channels, time) tensor, got shape {tuple(x.shape)}")
    return x.unsqueeze(2).contiguous(memory_format=torch.channels_last).squeeze(2)


def cat_time(prev: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``prev`` then ``x`` along time, channels-last (``torch.cat`` of 3-D tensors would make it channels-first)."""
    return torch.cat([prev.unsqueeze(2), x.unsqueeze(2)], dim=3).squeeze(2)


def tail_of(x: torch.Tensor, width: int) -> torch.Tensor:
    """The last ``width`` steps of ``x`` as their own channels-last tensor (a view would pin all of ``x``)."""
    return x[..., x.shape[-1] - width :].unsqueeze(2).clone(memory_format=torch.channels_last).squeeze(2)


def _version(t: torch.Tensor) -> int:
    """The tensor's in-place edit counter; -1 for tensors made under inference mode, which keep none."""
    try:
        return t._version
    except RuntimeError:
        return -1


class ChannelsLastConvs:
    """Runs a module's ``nn.Conv1d`` / ``nn.ConvTranspose1d`` as channels-last 2-D convolutions.

    Weights are reshaped once per convolution and reused until the module's weight changes (a new
    tensor, another dtype, or an in-place edit, which bumps the tensor's version counter; tensors
    created under inference mode keep no counter, so for them only a new tensor is noticed).
    """

    def __init__(self) -> None:
        self._prepared: dict[tuple[int, str], tuple[torch.Tensor, int, object]] = {}

    def prepare(self, conv, kind: str, build):
        """``build(conv)``, kept per (convolution, kind) until the convolution's weight changes."""
        source = conv.weight
        version = _version(source)
        key = (id(conv), kind)
        held = self._prepared.get(key)
        if held is not None and held[0] is source and held[1] == version:
            return held[2]
        value = build(conv)
        self._prepared[key] = (source, version, value)
        return value

    def _weight(self, conv) -> torch.Tensor:
        return self.prepare(
            conv,
            "channels-last",
            lambda c: c.weight.detach().unsqueeze(2).contiguous(memory_format=torch.channels_last),
        )

    def conv(self, conv, x: torch.Tensor) -> torch.Tensor:
        """``conv(x)`` for an ``nn.Conv1d`` without padding, ``x`` channels-last (B, C, T)."""
        if conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            return conv(x)
        y = F.conv2d(
            x.unsqueeze(2),
            self._weight(conv),
            conv.bias,
            (1, conv.stride[0]),
            (0, conv.padding[0]),
            (1, conv.dilation[0]),
            conv.groups,
        )
        return y.squeeze(2)

    def conv_transpose(self, conv, x: torch.Tensor) -> torch.Tensor:
        """``conv(x)`` for an ``nn.ConvTranspose1d``, ``x`` channels-last (B, C, T)."""
        y = F.conv_transpose2d(
            x.unsqueeze(2),
            self._weight(conv),
            conv.bias,
            (1, conv.stride[0]),
            (0, conv.padding[0]),
            (0, conv.output_padding[0]),
            conv.groups,
            (1, conv.dilation[0]),
        )
        return y.squeeze(2)

    def transposed_steps(self, conv, x: torch.Tensor, overlap: int) -> torch.Tensor:
        """Output steps ``overlap·stride`` to ``L·stride`` of ``conv(x)`` for a channels-last ``x`` (B, C_in, L)
        whose first ``overlap`` steps are the previous inputs (what the streamed decoder keeps)."""
        stride = conv.stride[0]
        return self.conv_transpose(conv, x)[..., overlap * stride : x.shape[-1] * stride]
