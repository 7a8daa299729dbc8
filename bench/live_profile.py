"""Where a captured live frame's time goes on a GPU: each CUDA graph's replay timed with CUDA events,
the encoder's masked attention over the preallocated keys against the exact-length one, and a
torch.profiler table of one replay of each graph; writes ``live_profile-<device>.txt``.

    python -m bench.live_profile --checkpoint /tmp/full --out bench/results
Random weights: timings only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import full_fp32, set_layer_scales, signal  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.settings import Settings  # noqa: E402


def _events_ms(fn, reps: int = 50) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--max-s", type=float, default=600.0)
    args = p.parse_args(argv)
    lines = []
    with full_fp32():
        engine = Engine(Settings(model=str(args.checkpoint), device="cuda:0", dtype="float32", live_max_s=args.max_s))
        assert engine.load(), engine.error
        set_layer_scales(engine.model, 1.0)
        x = signal(4.0, 1, "cuda:0")
        session = engine.live.open(SAMPLE_RATE, paced=False)
        session.push(x[: 2 * SAMPLE_RATE])
        enc, dec = session.encoder.graph, session.decoder.graph
        with torch.inference_mode():
            lines.append(f"keys/values preallocated: {enc.keys.numel()} steps (live_max_s {args.max_s:g})")
            first = enc.graphs[min(enc.graphs)]
            lines.append(
                f"encoder graph replay (keys up to {min(enc.graphs)} steps): {_events_ms(first.replay):.3f} ms"
            )
            lines.append(f"decoder graph replay: {_events_ms(dec.graph.replay):.3f} ms")
            kv = enc.state.kv
            q = torch.randn(1, kv.heads, 2, kv.head_dim, device="cuda:0")
            keys, values = kv.k[0], kv.v[0]
            mask = (enc.keys[None, :] <= torch.tensor([[60], [61]], device="cuda:0"))[None, None]

            def matmuls():
                scores = torch.matmul(q, keys.transpose(-1, -2)).masked_fill(~mask, float("-inf"))
                return torch.matmul(torch.softmax(scores, dim=-1), values)

            lines.append(f"one layer's attention as matmuls + softmax over all keys: {_events_ms(matmuls):.3f} ms")
            lines.append(
                "one layer's attention, fused kernel masked over all keys: "
                f"{_events_ms(lambda: F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)):.3f} ms; "
                f"exact 62 keys: {_events_ms(lambda: F.scaled_dot_product_attention(q, keys[:, :, :62], values[:, :, :62])):.3f} ms"
            )
            from torch.profiler import ProfilerActivity, profile

            for name, graph in (("encoder", first), ("decoder", dec.graph)):
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        graph.replay()
                    torch.cuda.synchronize()
                lines.append(f"\n== {name} graph, 5 replays ==")
                lines.append(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18))
        session.close()
    text = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "live_profile-cuda.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
