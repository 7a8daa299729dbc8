"""Where the batched live step's time goes on a GPU (``core.nn.live_batch``): a whole step for one
session timed from the host (copies in, two graph replays, copies out, one synchronisation), the graph replays alone per batch size, with the few-step convolutions as cuDNN's implicit GEMM and as
matmuls (``core.nn.frame_conv``),
the per-session graphs of the last round beside it, and a torch.profiler table of one step;
writes ``live_profile-cuda.txt``. Codes of the timed session are compared with the offline encode.

    python -m bench.live_profile --checkpoint /tmp/full --out bench/results
Random weights: timings only.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import agreement, full_fp32, set_layer_scales, signal  # noqa: E402
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME  # noqa: E402
from core.model.calls import backend_flags  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.nn import frame_conv, live_batch  # noqa: E402
from core.settings import Settings  # noqa: E402


def _spread(ms: list[float]) -> str:
    v = np.array(ms)
    return f"median {np.median(v):.2f} ms, p95 {np.percentile(v, 95):.2f} ms, max {v.max():.2f} ms ({v.size} frames)"


def _one_session(batch, x: np.ndarray) -> tuple[list[float], np.ndarray]:
    slot = batch.open()
    times, codes = [], []
    for low in range(0, x.size - SAMPLES_PER_FRAME + 1, SAMPLES_PER_FRAME):
        t = time.perf_counter()
        c, _ = batch.step([live_batch.Row(slot, samples=x[low : low + SAMPLES_PER_FRAME])])
        times.append((time.perf_counter() - t) * 1000)
        codes.append(c[0])
    batch.close(slot)
    return times, np.stack(codes)


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--max-s", type=float, default=600.0)
    p.add_argument("--seconds", type=float, default=12.0)
    args = p.parse_args(argv)
    lines = []
    with full_fp32():
        settings = Settings(model=str(args.checkpoint), device="cuda:0", dtype="float32", live_max_s=args.max_s)
        engine = Engine(settings)
        assert engine.load(), engine.error
        set_layer_scales(engine.model, 1.0)
        x = signal(args.seconds, 1, "cuda:0")
        whole = engine.encode_array(x).codes
        steps = int(args.max_s * 12.5) * 2 + 8
        flags = lambda op: backend_flags(settings, op)  # noqa: E731
        with torch.inference_mode():
            for rows in (0, 128, frame_conv.MATMUL_MAX_ROWS):
                frame_conv.MATMUL_MAX_ROWS = rows
                t0 = time.perf_counter()
                decoder = engine._fast.decoder  # type: ignore[union-attr]  # loaded above
                batch = live_batch.LiveBatch(engine.model, decoder, 32, steps, flags, capture=True)
                built = time.perf_counter() - t0
                _one_session(batch, x[: 2 * SAMPLE_RATE])  # warm
                times, codes = _one_session(batch, x)
                n = min(codes.shape[0], whole.shape[0])
                lines.append(
                    f"batched step, 1 session, few-step convolutions as matmuls up to {rows} rows "
                    f"({'on' if rows else 'off: cuDNN everywhere'}): "
                    f"{_spread(times)}; codes = offline encode {agreement(codes[:n], whole[:n]):.2%}; "
                    f"32 slots, {steps} key steps each, every bucket captured in {built:.1f} s"
                )
                replays = batch.measure(20)
                lines.append(
                    "  graph replays alone (encode + decode, ms per step by rows): "
                    + ", ".join(f"{b}: {1000 * s:.2f}" for b, s in replays.items())
                    + " -> per session: "
                    + ", ".join(f"{b}: {1000 * s / b:.2f}" for b, s in replays.items())
                )
                if rows == 128:
                    torch.cuda.empty_cache()
                if rows > 128:
                    from torch.profiler import ProfilerActivity, profile

                    slot = batch.open()
                    frame = x[:SAMPLES_PER_FRAME]
                    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                        for _ in range(5):
                            batch.step([live_batch.Row(slot, samples=frame)])
                    batch.close(slot)
                    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=14)
                del batch
                torch.cuda.empty_cache()
        session_graphs = engine.live
        session_graphs.batched = False  # the last round's per-session graphs, for comparison
        session = session_graphs.open(SAMPLE_RATE, paced=False)
        per = []
        with session:
            for low in range(0, x.size - SAMPLES_PER_FRAME + 1, SAMPLES_PER_FRAME):
                t = time.perf_counter()
                session.push(x[low : low + SAMPLES_PER_FRAME])
                per.append((time.perf_counter() - t) * 1000)
        lines.append(f"per-session graphs (last round), 1 session: {_spread(per[5:])}")
        lines.append("\n== batched step, 1 session, 5 steps (torch.profiler) ==\n" + table)
    text = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "live_profile-cuda.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
