"""Which interpolation points give Winograd F(m, 7) the smallest fp32 error (``core/nn/winograd.py``).

    python -m bench.winograd_points [--tile 6] [--channels 64] [--top 5]

Every symmetric set of small fractions (0, then ± pairs from ``CANDIDATES``; one unpaired point when
the count is odd) is tried on one random 64-channel kernel-7 convolution of 600 steps, float64 as the
reference; the best sets print with their SNR, beside the direct fp32 convolution's. Writes
``bench/results/winograd_points.md``. Seconds on a CPU.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from fractions import Fraction
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.nn import conv_layout, winograd  # noqa: E402

CANDIDATES = [Fraction(v) for v in ("1", "2", "1/2", "3/2", "2/3", "3", "1/3", "3/4", "4/3", "1/4", "4", "5/2", "2/5")]


def point_sets(m: int):
    finite = m + winograd.KERNEL - 2  # the point at infinity is always added
    pairs, odd = divmod(finite - 1, 2)
    for combo in itertools.combinations(CANDIDATES, pairs):
        base = (Fraction(0), *[s * p for p in combo for s in (1, -1)])
        if odd:
            yield from (base + (extra,) for extra in CANDIDATES if extra not in combo)
        else:
            yield base


def snr_db(ours: torch.Tensor, ref: torch.Tensor) -> float:
    return float(10 * torch.log10((ref**2).sum() / ((ours.double() - ref) ** 2).sum()))


def search(m: int, channels: int, top: int) -> list[str]:
    torch.manual_seed(0)
    weight = torch.randn(channels, channels, winograd.KERNEL, dtype=torch.float64) / (channels * 7) ** 0.5
    x = torch.randn(1, channels, 606, dtype=torch.float64)
    ref = F.conv1d(x, weight)
    conv = torch.nn.Conv1d(channels, channels, winograd.KERNEL, bias=False)
    conv.weight.data = weight.float()
    x32 = conv_layout.channels_last(x.float())
    held = winograd.POINTS[m]
    found = []
    try:
        for points in point_sets(m):
            winograd.POINTS[m] = points
            try:
                found.append((snr_db(winograd.conv(winograd.Prepared(conv, m), x32), ref), points))
            except (RuntimeError, ValueError):  # a singular set (a repeated point)
                continue
    finally:
        winograd.POINTS[m] = held
    found.sort(key=lambda item: -item[0])
    direct = snr_db(F.conv1d(x.float(), weight.float()), ref)
    lines = [f"## F({m}, 7), {channels} channels: {len(found)} sets; direct fp32 {direct:.1f} dB", ""]
    lines += [f"- {snr:.1f} dB: {', '.join(str(p) for p in points)}, ∞" for snr, points in found[:top]]
    current = next((snr for snr, points in found if points == held), None)
    lines += ["", f"The set in core/nn/winograd.py: {current:.1f} dB." if current else "", ""]
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tile", type=int, nargs="*", default=[4, 6])
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    lines = ["# Winograd F(m, 7) interpolation points by fp32 error (float64 reference)", ""]
    for m in args.tile:
        lines += search(m, args.channels, args.top)
    out = ROOT / "bench" / "results" / "winograd_points.md"
    out.write_text("\n".join(lines))
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main()
