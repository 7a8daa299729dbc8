"""One convolution of each kind the decoder runs, channels-first (``conv1d`` as PyTorch runs it) against
channels-last (``core.nn.conv_layout``), fp32 and bf16, on this machine's CPU; writes ``cpu_layout.{json,md}``.

    python -m bench.cpu_layout --out bench/results

Shapes are the decoder's for 10 s of audio: the last block's kernel-7 and 1x1 convolutions (96 channels
at 24 kHz), a dilated one of the block before (192 channels, dilation 3), and one at 768 channels. This
explains the layout choice; the end-to-end comparison with the official path is ``bench.speed_bench``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.nn.conv_layout import ChannelsLastConvs, channels_last  # noqa: E402

SHAPES = (
    (96, 240_000, 7, 1),
    (96, 240_000, 1, 1),
    (192, 80_000, 7, 3),
    (768, 4_000, 7, 1),
)  # channels, steps, kernel, dilation


def timed_ms(fn, repeats: int) -> float:
    fn()  # warm-up: oneDNN builds its primitive
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with torch.inference_mode():
        for dtype in (torch.float32, torch.bfloat16):
            for channels, steps, kernel, dilation in SHAPES:
                torch.manual_seed(0)
                conv = torch.nn.Conv1d(channels, channels, kernel, dilation=dilation).to(dtype)
                x = torch.randn(1, channels, steps + (kernel - 1) * dilation, dtype=dtype)
                x_last, convs = channels_last(x), ChannelsLastConvs()
                first = timed_ms(lambda: conv(x), args.repeats)
                last = timed_ms(lambda: convs.conv(conv, x_last), args.repeats)
                rows.append(
                    {
                        "dtype": str(dtype).removeprefix("torch."),
                        "channels": channels,
                        "steps": steps,
                        "kernel": kernel,
                        "dilation": dilation,
                        "channels_first_ms": first,
                        "channels_last_ms": last,
                    }
                )
    meta: dict[str, Any] = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    lines = [
        "# Decoder convolutions on this CPU: channels-first vs channels-last",
        "",
        f"torch {meta['torch']}, {meta['threads']} threads, median of {args.repeats}, {meta['date']}.",
        "",
        "| dtype | channels | steps | kernel | dilation | channels-first ms | channels-last ms | speed-up |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dtype']} | {r['channels']} | {r['steps']} | {r['kernel']} | {r['dilation']} | "
            f"{r['channels_first_ms']:.1f} | {r['channels_last_ms']:.1f} | {r['channels_first_ms'] / r['channels_last_ms']:.2f}× |"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu_layout.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / "cpu_layout.md").write_text("\n".join(lines) + "\n")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
