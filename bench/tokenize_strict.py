"""Why strict-fp32 batch windows were slow on the H200, and what fixes it: the engine's batched encode
(``Engine.encode_batch``, 32 clips a call, as the tokenize actors call it) under cuDNN variants, each
in a fresh process (cuDNN's plan cache lives per process), against lone
encodes (``Engine.encode_array``: what ``python -m core encode`` runs). Writes
``tokenize_bench-strict.json`` and ``tokenize_bench-strict.md`` to --out.

    python -m bench.tokenize_strict --checkpoint /tmp/full-ls1 --out bench/results

The checkpoint is built with transformer layer scales 1.0 when missing (exactness checks need context
to matter; NOTES.md). Random weights: speed, memory and agreement only, nothing about quality.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SR = 24_000  # Hz
BATCH = 32  # clips per encode call: the tokenize actor's --batch-files default
HOUR_S = 3600.0
CAP_ENV = "CUDNN_CONV_WSCAP_DBG"  # PyTorch's cuDNN workspace cap, MiB: measured without effect (run1)

# name -> (what it is, Settings changes, extra switches)
VARIANTS: dict[str, tuple[str, dict, dict]] = {
    "tf32": ("TF32 allowed, windows", {"strict_fp32_encode": False}, {}),
    "strict": ("strict fp32, windows of one shape (tail window padded): the default", {}, {}),
    "strict-benchmark": ("strict fp32, windows of one shape, cudnn.benchmark", {"cudnn_benchmark": True}, {}),
    "strict-onepass": ("strict fp32, budget-sized groups, one pass each (before)", {}, {"onepass": True}),
    "strict-nocudnn": ("strict fp32, windows, cuDNN off (PyTorch's own convolution)", {}, {"nocudnn": True}),
}


def make_clips(path: Path, count: int, min_s: float, max_s: float, device: str) -> None:
    from bench.harness import signal

    rng = np.random.default_rng(0)
    clips = [signal(float(s), i, device) for i, s in enumerate(rng.uniform(min_s, max_s, count))]
    np.savez(path, *clips)


def load_clips(path: Path) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[f"arr_{i}"] for i in range(len(z.files))]


def top_kernels(engine, clips, n: int = 6) -> list[dict]:
    """The CUDA kernels that took the most time in one batched call."""
    import types

    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        engine.encode_batch([types.SimpleNamespace(samples=c) for c in clips])
        torch.cuda.synchronize()
    rows = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:n]
    return [{"kernel": r.key[:120], "ms": r.device_time_total / 1000, "calls": r.count} for r in rows]


def child(args) -> None:
    """One variant in this process: time the batched encodes, save the codes."""
    name = args.variant
    _, changes, switches = VARIANTS.get(name, ("", {}, {}))
    import types

    import torch

    from core.model import planner
    from core.model.engine import Engine
    from core.settings import Settings
    from core.units import MIB

    if switches.get("onepass"):
        planner.batch_windows = lambda settings: False  # the engine's strict path before this change
    if switches.get("nocudnn"):
        torch.backends.cudnn.enabled = False
    engine = Engine(Settings(model=args.checkpoint, device=args.device, **changes))
    assert engine.load(), engine.error
    clips = load_clips(args.clips)
    audio_s = sum(c.size for c in clips) / SR
    result: dict = {"variant": name, "env_cap": os.environ.get(CAP_ENV), "clips": len(clips), "audio_s": audio_s}
    if name == "lone":
        start = time.perf_counter()
        codes = [engine.encode_array(c).codes for c in clips]
        result["wall_s"] = time.perf_counter() - start
    else:
        batches = [clips[i : i + BATCH] for i in range(0, len(clips), BATCH)]
        cuda = args.device.startswith("cuda")
        engine.encode_batch([types.SimpleNamespace(samples=c) for c in batches[0]])  # warm-up: plan choice
        walls = []
        for _ in range(args.passes):
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            codes = []
            for b in batches:
                codes += [r.codes for r in engine.encode_batch([types.SimpleNamespace(samples=c) for c in b])]
            if cuda:
                torch.cuda.synchronize()
            walls.append(time.perf_counter() - start)
        result.update(walls_s=walls, wall_s=float(np.median(walls)))
        if cuda:
            result.update(
                peak_allocated_mib=torch.cuda.max_memory_allocated() / MIB,
                peak_reserved_mib=torch.cuda.max_memory_reserved() / MIB,
                kernels=top_kernels(engine, batches[0]),
            )
        result["audio_h_per_gpu_h"] = audio_s / result["wall_s"]
    np.savez(args.codes, *codes)
    print("RESULT " + json.dumps(result), flush=True)


def agreement(codes_path: Path, lone_path: Path) -> dict:
    a, b = load_clips(codes_path), load_clips(lone_path)
    equal = sum(int((x == y).sum()) for x, y in zip(a, b, strict=True))
    total = sum(y.size for y in b)
    return {
        "codes_equal_share": equal / total,
        "clips_equal": sum(int(np.array_equal(x, y)) for x, y in zip(a, b, strict=True)),
        "clips": len(b),
    }


def run_variant(args, name: str, work: Path, timeout_s: float) -> dict:
    env = {k: v for k, v in os.environ.items() if k != CAP_ENV}
    if name in VARIANTS and VARIANTS[name][2].get("env_cap"):
        env[CAP_ENV] = str(VARIANTS[name][2]["env_cap"])
    codes = work / f"codes-{name}.npz"
    cmd = [sys.executable, "-m", "bench.tokenize_strict", "--child", name, "--checkpoint", args.checkpoint]
    cmd += ["--clips", str(work / "clips.npz"), "--codes", str(codes), "--passes", str(args.passes)]
    cmd += ["--device", args.device]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"variant": name, "error": f"over {timeout_s:.0f} s"}
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode or not lines:
        return {"variant": name, "error": (done.stderr or done.stdout)[-1500:]}
    result = json.loads(lines[-1][len("RESULT ") :])
    result["process_s"] = time.perf_counter() - start
    result["codes"] = str(codes)
    return result


def markdown(result: dict) -> str:
    lines = [
        "# Strict fp32 at full speed: cuDNN plans for the batch windows",
        "",
        (
            f"{result['gpu']}, torch {result['torch']}, cuDNN {result['cudnn']}. {result['clips']} clips of "
            f"{result['min_s']:g}-{result['max_s']:g} s ({result['audio_s'] / HOUR_S:.2f} h), `Engine.encode_batch` on "
            f"{BATCH} clips a call (as each tokenize actor), median of {result['passes']} passes after a warm-up "
            "batch, each variant in a fresh process. Agreement: against lone encodes (`Engine.encode_array`, "
            "what `python -m core encode` runs; strict fp32). Checkpoint: full size, random weights, "
            "transformer layer scales 1.0. Random weights: speed, memory and agreement only."
        ),
        "",
        "| variant | wall s | audio h per GPU-hour | peak allocated GiB | peak reserved GiB | codes equal to lone | clips equal | top kernel |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["variants"]:
        if "error" in r:
            lines.append(f"| {r['variant']} | failed: {r['error'].splitlines()[-1][:120]} | | | | | | |")
            continue
        what = VARIANTS.get(r["variant"], ("lone encodes, one clip at a time",))[0]
        agree = r.get("agreement") or {}
        share = f"{100 * agree['codes_equal_share']:.4f}%" if agree else "reference"
        clips = f"{agree['clips_equal']}/{agree['clips']}" if agree else "-"
        kernel = r["kernels"][0]["kernel"][:60] if r.get("kernels") else "-"
        rate = f"{r['audio_h_per_gpu_h']:.0f}" if "audio_h_per_gpu_h" in r else f"{r['audio_s'] / r['wall_s']:.0f}"
        alloc = f"{r['peak_allocated_mib'] / 1024:.1f}" if "peak_allocated_mib" in r else "-"
        reserved = f"{r['peak_reserved_mib'] / 1024:.1f}" if "peak_reserved_mib" in r else "-"
        lines.append(
            f"| {r['variant']}: {what} | {r['wall_s']:.2f} | {rate} | {alloc} | {reserved} | {share} | {clips} | `{kernel}` |"
        )
    lines += ["", "Top CUDA kernels of one 32-clip call, per variant:", ""]
    for r in result["variants"]:
        for k in r.get("kernels", [])[:4]:
            lines.append(f"- {r['variant']}: `{k['kernel']}` {k['ms']:.1f} ms in {k['calls']} calls")
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="/tmp/full-ls1")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--tiny", action="store_true", help="tiny checkpoint (CPU smoke run)")
    p.add_argument("--work", type=Path, default=Path("/tmp/tokenize-strict"))
    p.add_argument("--clips-count", type=int, default=256)
    p.add_argument("--min-s", type=float, default=3.0)
    p.add_argument("--max-s", type=float, default=17.0)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--timeout-s", type=float, default=120.0, help="per variant")
    p.add_argument("--child", dest="variant", default=None, help=argparse.SUPPRESS)
    p.add_argument("--clips", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--codes", type=Path, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> dict | None:
    args = parse_args(argv)
    if args.variant:
        child(args)
        return None
    import torch

    from bench.harness import ensure_scaled_checkpoint  # torch only after a child's switches are set

    checkpoint = Path(args.checkpoint)
    ensure_scaled_checkpoint(checkpoint, args.tiny)
    args.work.mkdir(parents=True, exist_ok=True)
    clips_path = args.work / "clips.npz"
    if not clips_path.exists():
        make_clips(clips_path, args.clips_count, args.min_s, args.max_s, args.device)
    clips = load_clips(clips_path)
    result = {
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "CPU",
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "clips": len(clips),
        "audio_s": sum(c.size for c in clips) / SR,
        "min_s": args.min_s,
        "max_s": args.max_s,
        "passes": args.passes,
        "variants": [],
    }
    lone = run_variant(args, "lone", args.work, args.timeout_s)
    result["variants"].append(lone)
    for name in args.variants.split(","):
        r = run_variant(args, name, args.work, args.timeout_s)
        if "error" not in r and "error" not in lone:
            r["agreement"] = agreement(Path(r["codes"]), Path(lone["codes"]))
        result["variants"].append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "kernels"}), flush=True)
        if args.out:  # after each variant: a cut-short run still leaves what it measured
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "tokenize_bench-strict.json").write_text(json.dumps(result, indent=2) + "\n")
            (args.out / "tokenize_bench-strict.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
