"""A causal convolution over one frame's few steps as one matrix product (the batched live step).

In strict fp32 cuDNN runs a 1-d convolution over one live frame (the decoder's 1 to 1,920 steps per
row, the encoder's 1,920 to 2) as an implicit GEMM that takes ≈60 µs on an H200 almost whatever the size: the largest share of the live step (bench/results/live_profile-cuda.txt).
Unfolded into (rows x in_channels·kernel) columns, the same convolution is one cuBLAS fp32 product with
the weight as a (out_channels x in_channels·kernel) matrix: the same sums in another order (fp32
rounding only; no TF32 unless the matmul flag allows it, as for every other matmul of the step).

``conv1d`` takes the product where the output has at most ``MATMUL_MAX_ROWS`` batch·steps and the
convolution is dense (groups 1), and the module's own convolution elsewhere.
"""

from __future__ import annotations

import torch

from core.codec import SAMPLES_PER_FRAME

# batch x output steps up to which a dense convolution runs as one matmul (0: never): one frame's samples,
# so a single session's step takes it everywhere (measured as 2,048, which picks the same convolutions)
MATMUL_MAX_ROWS = SAMPLES_PER_FRAME


def conv1d(conv: torch.nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """``conv(x)`` for x (B, C_in, L) already padded; as a matmul where it pays (see the module)."""
    kernel, stride, dilation = conv.kernel_size[0], conv.stride[0], conv.dilation[0]
    span = (kernel - 1) * dilation + 1
    steps = (x.shape[-1] - span) // stride + 1
    batch = x.shape[0]
    if conv.groups != 1 or conv.padding[0] != 0 or batch * steps > MATMUL_MAX_ROWS or steps < 1:
        return conv(x)
    cols = x.unfold(2, span, stride)  # (B, C_in, steps, span)
    if dilation > 1:
        cols = cols[..., ::dilation]
    cols = cols.permute(1, 3, 0, 2).reshape(conv.in_channels * kernel, batch * steps)
    weight = conv.weight.reshape(conv.out_channels, conv.in_channels * kernel)
    out = torch.matmul(weight, cols) if conv.bias is None else torch.addmm(conv.bias[:, None], weight, cols)
    out = out.view(conv.out_channels, batch, steps).transpose(0, 1)
    return out if batch == 1 else out.contiguous()


def transposed_weight(conv: torch.nn.ConvTranspose1d) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The (out_channels·stride x in_channels·taps) matrix and the bias per output row of a causal
    transposed convolution run as :func:`conv_transpose1d`; None where that does not apply."""
    if not isinstance(conv, torch.nn.ConvTranspose1d):
        return None
    kernel, stride = conv.kernel_size[0], conv.stride[0]
    if conv.groups != 1 or conv.padding[0] != 0 or conv.output_padding[0] != 0 or conv.dilation[0] != 1:
        return None
    taps = -(-kernel // stride)  # input steps that reach one output step: the overlap + 1
    with torch.no_grad():
        weight = torch.nn.functional.pad(conv.weight, (0, taps * stride - kernel))  # (C_in, C_out, taps·stride)
        weight = weight.view(conv.in_channels, conv.out_channels, taps, stride).flip(2)
        weight = weight.permute(1, 3, 0, 2).reshape(conv.out_channels * stride, conv.in_channels * taps)
        bias = None if conv.bias is None else conv.bias.repeat_interleave(stride)[:, None]
    return weight.contiguous(), bias


def conv_transpose1d(
    conv: torch.nn.ConvTranspose1d, x: torch.Tensor, prepared: tuple[torch.Tensor, torch.Tensor | None]
) -> torch.Tensor | None:
    """Output steps ``overlap·stride`` to ``(overlap + L)·stride`` of ``conv(x)`` for x (B, C_in,
    overlap + L), the previous ``overlap`` input steps first (what the streamed decoder keeps): step
    ``j·stride + r`` is the sum over the ``overlap + 1`` inputs that reach it, so one matmul of the
    unfolded inputs with ``prepared`` (:func:`transposed_weight`) and no overlap-add. None (run the
    module) where the output has more than ``MATMUL_MAX_ROWS`` batch·steps."""
    weight, bias = prepared
    stride = conv.stride[0]
    taps = weight.shape[1] // conv.in_channels
    batch, steps = x.shape[0], x.shape[-1] - taps + 1
    if steps < 1 or batch * steps * stride > MATMUL_MAX_ROWS:
        return None
    cols = x.unfold(2, taps, 1).permute(1, 3, 0, 2).reshape(conv.in_channels * taps, batch * steps)
    out = torch.matmul(weight, cols) if bias is None else torch.addmm(bias, weight, cols)
    out = out.view(conv.out_channels, stride, batch, steps).permute(2, 0, 3, 1)
    return out.reshape(batch, conv.out_channels, steps * stride)
