"""Live latency: compute per pushed block and the real-time factor of a live session (the engine's
``core.model.live`` path: streaming input, encoder and decoder one frame at a time), beside the official
``Qwen3TTSTokenizer`` encode + decode of the same clip in the same run; writes ``live_bench-<device>.{json,md}``.

    python -m bench.live_bench --device cuda:0 --checkpoint /tmp/full --out bench/results   # H200
    python -m bench.live_bench --device cpu --checkpoint /tmp/full --seconds 4 --out bench/results

The checkpoint is the full-size random one with every transformer layer scale set to 1.0 in memory;
both paths run in strict fp32 (TF32 off), so the live codes can be compared with the official ones.
Blocks are pushed as fast as the model goes (the compute a microphone's block costs); a real-time
run (``--realtime``) paces them like a microphone. The latency a listener hears is the sum of: the
codec's algorithmic latency (one 80 ms frame: a frame is encoded once its last sample is in; the
encoder has no lookahead), the compute per block, and transport plus playback buffering (measured in
the browser test, docs/live.md). Random weights: nothing here says anything about audio quality.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import agreement, full_fp32, official_decode, official_encode, set_layer_scales, signal, sync  # noqa: E402
from core.codec import FRAME_RATE, SAMPLE_RATE  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("bench.live")
FRAME_MS = 1000.0 / FRAME_RATE  # the codec's algorithmic latency: one frame


def live_run(engine, x: np.ndarray, block_ms: float, realtime: bool) -> dict:
    """One session over ``x`` in blocks of ``block_ms``: per-block compute, lock waits, codes."""
    block = max(1, round(SAMPLE_RATE * block_ms / 1000))
    compute, with_frames, waits = [], [], []
    start = time.perf_counter()
    with engine.live.open(SAMPLE_RATE, paced=False) as session:
        for index, low in enumerate(range(0, x.size, block)):
            if realtime:
                time.sleep(max(0.0, start + (index + 1) * block / SAMPLE_RATE - time.perf_counter()))
            step = session.push(x[low : low + block])
            compute.append(step.compute_s * 1000)
            waits.append(step.wait_s * 1000)
            if step.codes.shape[0]:
                with_frames.append(step.compute_s * 1000)
        result = session.finish()
    wall = time.perf_counter() - start
    return {
        "block_ms": block_ms,
        "realtime": realtime,
        "blocks": len(compute),
        "compute_ms_per_block": _spread(compute),
        "compute_ms_per_block_with_frames": _spread(with_frames),
        "compute_ms_per_frame": {"median": result.stats["compute_ms_median"], "p95": result.stats["compute_ms_p95"]},
        "lock_wait_ms": _spread(waits),
        "realtime_factor": result.stats["realtime_factor"],
        "wall_s": wall,
        "codes": result.codes,
        "audio": result.reconstruction,
    }


def _spread(values: list[float]) -> dict:
    v = np.array(values or [0.0])
    return {"median": float(np.median(v)), "p95": float(np.percentile(v, 95)), "max": float(v.max())}


def machine(device: str) -> dict:
    out = {"platform": platform.platform(), "torch": torch.__version__, "threads": torch.get_num_threads()}
    if device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(torch.device(device))
    try:
        names = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
        out["cpu"], out["cpus"] = names[0], len(names)
    except (OSError, IndexError):
        pass
    out["loadavg"] = os.getloadavg()
    return out


def run(args) -> dict:
    engine = Engine(Settings(model=str(args.checkpoint), device=args.device, dtype="float32"))
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    scales = set_layer_scales(engine.model, 1.0)
    tok = engine._tokenizer  # the official wrapper around the very same model object
    x = signal(args.seconds, 1, args.device)
    out: dict = {"machine": machine(args.device), "seconds": args.seconds, "layer_scales_set": scales, "runs": []}
    with full_fp32():
        log.info("warm-up")
        live_run(engine, x[:SAMPLE_RATE], 80.0, False)
        official_decode(tok, official_encode(tok, x[:SAMPLE_RATE]))
        official = []
        for _ in range(args.repeats):
            sync(args.device)
            t0 = time.perf_counter()
            codes = official_encode(tok, x)
            sync(args.device)
            t1 = time.perf_counter()
            official_decode(tok, codes)
            sync(args.device)
            official.append((t1 - t0, time.perf_counter() - t1))
        out["official"] = {
            "encode_s": statistics.median(o[0] for o in official),
            "decode_s": statistics.median(o[1] for o in official),
        }
        out["official"]["realtime_factor"] = (out["official"]["encode_s"] + out["official"]["decode_s"]) / args.seconds
        for block_ms in args.blocks_ms:
            for realtime in (False, True) if args.realtime else (False,):
                runs = [live_run(engine, x, block_ms, realtime) for _ in range(args.repeats)]
                best = runs[len(runs) // 2]
                row = {k: v for k, v in best.items() if k not in ("codes", "audio")}
                row["realtime_factor_runs"] = [r["realtime_factor"] for r in runs]
                row["codes_agree_official"] = agreement(best["codes"], codes)
                row["loadavg"] = os.getloadavg()
                out["runs"].append(row)
                log.info("%s", {k: row[k] for k in ("block_ms", "realtime", "realtime_factor")})
    return out


def markdown(result: dict) -> str:
    m = result["machine"]
    where = m.get("gpu") or f"{m.get('cpu', 'CPU')} ({m.get('cpus', '?')} CPUs, {m['threads']} threads)"
    off = result["official"]
    lines = [
        f"# Live latency on {where}",
        "",
        f"Full-size random checkpoint, layer scales 1.0, strict fp32; {result['seconds']:g} s clip; load average "
        f"{', '.join(f'{v:.1f}' for v in m['loadavg'])} at the end. Medians of the runs. Official path, same run: encode "
        f"{off['encode_s']:.3f} s + decode {off['decode_s']:.3f} s = real-time factor {off['realtime_factor']:.3f} (offline, whole clip).",
        "",
        "| block | paced | compute per block with a frame (median / p95 / max ms) | compute per frame (median / p95 ms) | real-time factor | codes = official |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["runs"]:
        c, f = r["compute_ms_per_block_with_frames"], r["compute_ms_per_frame"]
        lines.append(
            f"| {r['block_ms']:g} ms | {'yes' if r['realtime'] else 'no'} | {c['median']:.1f} / {c['p95']:.1f} / {c['max']:.1f} | "
            f"{f['median']:.1f} / {f['p95']:.1f} | {r['realtime_factor']:.3f} | {r['codes_agree_official']:.2%} |"
        )
    first = result["runs"][0]["compute_ms_per_block_with_frames"]
    lines += [
        "",
        f"Server-side latency of a sample, 80 ms blocks: algorithmic {FRAME_MS:.0f} ms (worst sample: the first of a "
        f"frame) + compute {first['p95']:.1f} ms (p95) = {FRAME_MS + first['p95']:.1f} ms; transport and playback "
        "buffering come on top (browser test, docs/live.md). A real-time factor below 1 keeps up with a speaker.",
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--blocks-ms", type=lambda s: [float(v) for v in s.split(",")], default=[80.0, 160.0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--realtime", action="store_true", help="also run each block size paced like a microphone")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = parse_args(argv)
    result = run(args)
    tag = "cuda" if args.device.startswith("cuda") else "cpu"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"live_bench-{tag}.json").write_text(json.dumps(result, indent=2))
    (args.out / f"live_bench-{tag}.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
