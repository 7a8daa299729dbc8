"""The streaming decoder's convolutions on a CPU: each as the kind of product that runs fastest there.

Measured per second of audio on the 2-core AMD EPYC (AVX2), 1 thread, 4-frame packets, full-size model
(``bench/cpu_convs.py`` times each call per product; ``bench/results/live_cpu.md`` has the panel), channels-last oneDNN for every convolution took
2.34 s of CPU time, of which:

- the transposed convolutions 0.68 s: oneDNN's deconvolution is far from the product's cost (and
  falls back to a reference loop for some shapes). Each is one matrix product here: an output step
  ``j·stride + r`` is the sum over the ``overlap + 1`` inputs that reach it (no overlap-add), the
  previous inputs supplied by the stream's state;
- the kernel-7 convolution from 1,024 to 1,536 channels at 50 steps/s 0.37 s for 16 output steps per
  packet: weight-bound, and oneDNN reorders its 44 MB weight every call. Few output steps: one matrix
  product of the unfolded inputs with the weight as it is (``GEMM_MAX_ROWS``);
- the residual units' kernel-7 convolutions 0.66 s, near fp32 peak already: Winograd F(m, 7)
  (``core.nn.winograd``) does their products in fewer multiplications.

Every path computes the same sums in another order (fp32 rounding; Winograd adds its transforms'
rounding, bounded in its tests); anything else (depthwise, strided, other dtypes for Winograd) runs
the channels-last oneDNN convolution of :class:`ChannelsLastConvs`.
"""

from __future__ import annotations

import torch

from core.nn import winograd
from core.nn.conv_layout import ChannelsLastConvs

GEMM_MAX_ROWS = 256  # batch·output steps up to which a dense convolution is one unfolded matrix product
WINOGRAD_TILE = 6  # F(6, 7): outputs per tile (2, 4 or 6; larger saves more products, rounds more)
WINOGRAD_MIN_CHANNELS = 64  # below this the transforms cost more than the products they save
WINOGRAD_MIN_ROWS = 64  # batch·output steps below which the direct convolution is as fast


class CpuConvs(ChannelsLastConvs):
    """:class:`ChannelsLastConvs` with products instead of oneDNN where they pay on a CPU."""

    def __init__(self, winograd_tile: int | None = WINOGRAD_TILE, winograd_min_channels: int = WINOGRAD_MIN_CHANNELS):
        super().__init__()
        self.winograd_tile = winograd_tile  # None or 0: no Winograd (the plain products only)
        self.winograd_min_channels = winograd_min_channels

    def conv(self, conv, x: torch.Tensor) -> torch.Tensor:
        path = self.path(conv, x)
        if path == "winograd":
            tile = self.winograd_tile
            assert tile  # ``path`` picks Winograd only with a tile
            prepared = self.prepare(conv, f"winograd{tile}", lambda c: winograd.Prepared(c, tile))
            return winograd.conv(prepared, x)
        if path == "gemm":
            return _unfolded(conv, self.prepare(conv, "gemm", _gemm_weight), x)
        return super().conv(conv, x)

    def path(self, conv, x: torch.Tensor) -> str:
        """Which product runs ``conv(x)``: "winograd", "gemm" or "onednn" (the rules in the module)."""
        if conv.groups != 1 or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            return "onednn"
        if conv.padding[0] != 0 or x.stride(1) != 1 or x.dim() != 3:
            return "onednn"
        kernel, dilation, stride = conv.kernel_size[0], conv.dilation[0], conv.stride[0]
        rows = x.shape[0] * ((x.shape[-1] - (kernel - 1) * dilation - 1) // stride + 1)
        if rows < 1:
            return "onednn"
        if (
            self.winograd_tile
            and kernel == winograd.KERNEL
            and stride == 1
            and x.dtype == torch.float32
            and min(conv.in_channels, conv.out_channels) >= self.winograd_min_channels
            and rows >= WINOGRAD_MIN_ROWS
        ):
            return "winograd"
        if kernel == 1 or stride > 1 or rows <= GEMM_MAX_ROWS:
            return "gemm"
        return "onednn"

    def transposed_steps(self, conv, x: torch.Tensor, overlap: int) -> torch.Tensor:
        prepared = self.prepare(conv, "transposed", _transposed_weight)
        if prepared is None or x.stride(1) != 1 or x.shape[-1] <= overlap:
            return super().transposed_steps(conv, x, overlap)
        weight, bias = prepared
        stride, taps = conv.stride[0], overlap + 1
        if weight.shape[0] != conv.in_channels * taps:
            return super().transposed_steps(conv, x, overlap)
        rows = x.transpose(1, 2)  # (B, L, C_in), a free view
        batch, steps = rows.shape[0], rows.shape[1] - overlap
        cols = rows.unfold(1, taps, 1).reshape(batch * steps, conv.in_channels * taps)
        out = torch.mm(cols, weight) if bias is None else torch.addmm(bias, cols, weight)
        return out.view(batch, steps * stride, conv.out_channels).transpose(1, 2)


def _gemm_weight(conv) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(C_in·kernel, C_out): the weight for ``unfolded inputs @ weight``."""
    weight = conv.weight.detach().reshape(conv.out_channels, conv.in_channels * conv.kernel_size[0])
    return weight.T.contiguous(), None if conv.bias is None else conv.bias.detach()


def _unfolded(conv, prepared, x: torch.Tensor) -> torch.Tensor:
    """A dense convolution of channels-last ``x`` as one product of its unfolded inputs."""
    weight, bias = prepared
    kernel, dilation, stride = conv.kernel_size[0], conv.dilation[0], conv.stride[0]
    span = (kernel - 1) * dilation + 1
    rows = x.transpose(1, 2)  # (B, L, C_in), a free view
    batch = rows.shape[0]
    if kernel == 1 and stride == 1:
        cols = rows.reshape(batch * rows.shape[1], conv.in_channels)  # no copy for a contiguous view
    else:
        cols = rows.unfold(1, span, stride)  # (B, steps, C_in, span)
        if dilation > 1:
            cols = cols[..., ::dilation]
        cols = cols.reshape(-1, conv.in_channels * kernel)
    out = torch.mm(cols, weight) if bias is None else torch.addmm(bias, cols, weight)
    return out.view(batch, -1, conv.out_channels).transpose(1, 2)


def _transposed_weight(conv) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """(C_in·taps, stride·C_out) for a causal transposed convolution's steps (see the module), or None."""
    kernel, stride = conv.kernel_size[0], conv.stride[0]
    if conv.groups != 1 or conv.padding[0] != 0 or conv.output_padding[0] != 0 or conv.dilation[0] != 1:
        return None
    taps = -(-kernel // stride)
    with torch.no_grad():
        weight = torch.nn.functional.pad(conv.weight.detach(), (0, taps * stride - kernel))  # (C_in, C_out, taps·s)
        weight = weight.view(conv.in_channels, conv.out_channels, taps, stride).flip(2)  # oldest input first
        # rows: input channel then tap (the unfolded inputs' order); columns: phase r then output channel
        weight = weight.permute(0, 2, 3, 1).reshape(conv.in_channels * taps, stride * conv.out_channels)
        bias = None if conv.bias is None else conv.bias.detach().repeat(stride)
    return weight.contiguous(), bias
