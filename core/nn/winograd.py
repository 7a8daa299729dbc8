"""Winograd's minimal filtering for the decoder's kernel-7 convolutions on a CPU.

The decoder's residual units spend most of a CPU decode in dense kernel-7 convolutions (channels 768,
384, 192 and 96, dilations 1, 3 and 9), and oneDNN already runs them near the CPU's fp32 peak: fewer
multiplications is what is left. Winograd's F(m, 7) gives ``m`` outputs of a 7-tap filter from
``m + 6`` inputs with ``m + 6`` products instead of ``7·m``: with the channel sums, one batched
matrix product of ``m + 6`` (C_in x C_out) matrices over every tile, plus two small transforms.
F(6, 7) does the products' work in 12/42 of the direct convolution's.

Exact arithmetic gives the same outputs; in fp32 the transforms add rounding. The points are chosen for
small error; measured on random 64-channel filters and inputs, float64 as reference: direct fp32
128 dB, F(4, 7) 115 dB, F(6, 7) 108 dB SNR (``tests/core/nn/test_winograd.py`` holds each to its bound). A dilated convolution is ``dilation``
interleaved undilated ones (the phases), so every dilation takes the same path.

Tensors are channels-last ``(B, C, T)`` views whose channels are adjacent in memory (``conv_layout``):
physically ``(B, T, C)``, so tiles are rows and the transforms are plain matrix products.
"""

from __future__ import annotations

from fractions import Fraction

import torch
import torch.nn.functional as F

KERNEL = 7  # the filter length this module serves
_F = Fraction
# interpolation points per tile size m (m + 5 finite points, plus infinity), picked for the smallest
# fp32 error among symmetric sets of small fractions (a search over 1,287 sets for F(6, 7), ``bench/winograd_points.py``)
POINTS = {
    2: (_F(0), _F(1), _F(-1), _F(2), _F(-2), _F(1, 2), _F(-1, 2)),
    4: (_F(0), _F(3, 4), _F(-3, 4), _F(4, 3), _F(-4, 3), _F(5, 2), _F(-5, 2), _F(2, 5), _F(-2, 5)),
    6: (_F(0), _F(1), _F(-1), _F(3, 2), _F(-3, 2), _F(2, 3), _F(-2, 3), _F(3), _F(-3), _F(1, 3), _F(-1, 3)),
}
# outputs per phase computed in one pass; longer inputs go in blocks of this many (kept in cache)
BLOCK_STEPS = 1536


def matrices(m: int, r: int = KERNEL) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float64 ``(A^T, G, B^T)`` of F(m, r) (Toom-Cook, exact in rationals until the inverse):
    ``y = A^T [(G g) * (B^T d)]`` for a tile ``d`` of ``m + r - 1`` inputs and a filter ``g``."""
    points = POINTS[m]
    n = m + r - 1
    if len(points) != n - 1:
        raise ValueError(f"F({m}, {r}) needs {n - 1} finite points, {len(points)} are listed")

    def evaluation(k: int) -> torch.Tensor:
        rows = [[float(Fraction(p) ** j) for j in range(k)] for p in points]
        rows.append([0.0] * (k - 1) + [1.0])  # the point at infinity: the leading coefficient
        return torch.tensor(rows, dtype=torch.float64)

    at = evaluation(m).T.contiguous()
    g = evaluation(r)
    bt = torch.linalg.inv(evaluation(n)).T.contiguous()
    return at, g, bt


class Prepared:
    """One convolution's filter in the Winograd domain, and the two transforms, in the layer's dtype."""

    def __init__(self, conv: torch.nn.Conv1d, m: int):
        if conv.kernel_size[0] != KERNEL or conv.stride[0] != 1 or conv.groups != 1 or conv.padding[0] != 0:
            raise ValueError("Winograd F(m, 7) serves dense, unpadded, stride-1 kernel-7 convolutions")
        at, g, bt = matrices(m)
        weight = conv.weight.detach()
        dtype, device = weight.dtype, weight.device
        self.m = m
        self.dilation = conv.dilation[0]
        # (n, C_in, C_out): filter transformed per point, for ``tiles (n, N, C_in) @ u``
        self.u = torch.einsum("nr,oir->nio", g.to(device), weight.double()).to(dtype).contiguous()
        self.at = at.to(device=device, dtype=dtype)
        self.bt = bt.to(device=device, dtype=dtype)
        self.bias = None if conv.bias is None else conv.bias.detach()


def conv(prepared: Prepared, x: torch.Tensor) -> torch.Tensor:
    """The valid convolution of a channels-last ``x`` (B, C_in, L): channels-last (B, C_out, L - 6·d)."""
    d = prepared.dilation
    span = (KERNEL - 1) * d
    rows = x.transpose(1, 2)  # (B, L, C): a free view of a channels-last tensor
    batch, length, _ = rows.shape
    steps = length - span
    if steps < 1:
        raise ValueError(f"a kernel-7 convolution with dilation {d} needs more than {span} inputs, got {length}")
    out = torch.empty(batch, steps, prepared.u.shape[2], dtype=x.dtype, device=x.device)
    block = BLOCK_STEPS * d
    for low in range(0, steps, block):
        high = min(steps, low + block)
        out[:, low:high] = _tiles(prepared, rows[:, low : high + span])
    if prepared.bias is not None:
        out += prepared.bias
    return out.transpose(1, 2)


def _tiles(p: Prepared, rows: torch.Tensor) -> torch.Tensor:
    """(B, L, C_in) rows -> (B, L - 6·d, C_out) through F(m, 7) per phase."""
    m, d = p.m, p.dilation
    n = m + KERNEL - 1
    batch, length, channels = rows.shape
    steps = length - (KERNEL - 1) * d
    tiles = -(-steps // (d * m))  # per phase
    padded = tiles * m * d + (KERNEL - 1) * d
    if padded > length:  # zeros after the end only feed outputs past ``steps``, cut below
        rows = F.pad(rows, (0, 0, 0, padded - length))
    phased = rows.reshape(batch, padded // d, d, channels)  # time = j·d + phase
    cols = phased.unfold(1, n, m)  # (B, tiles, d, C, n), a view
    cols = cols.permute(4, 0, 1, 2, 3).reshape(n, -1)  # (n, B·tiles·d·C): point-major
    v = (p.bt @ cols).view(n, batch * tiles * d, channels)  # inputs in the Winograd domain
    products = torch.bmm(v, p.u)  # (n, B·tiles·d, C_out): the channel sums, once per point
    c_out = p.u.shape[2]
    y = (p.at @ products.view(n, -1)).view(m, batch, tiles, d, c_out)  # back: m outputs per tile
    y = y.permute(1, 2, 0, 3, 4).reshape(batch, tiles * m * d, c_out)  # time = (tile·m + i)·d + phase
    return y[:, :steps]
