"""The tokenize actor's model work alone, by batch layout: clips per call, length order and the padded
audio per call (``Settings.batch_audio_s``), strict fp32, through ``Engine.encode_batch`` as the actor
calls it; where one call's GPU time goes (torch.profiler: convolutions, matmuls, elementwise, copies);
batched codes against lone encodes. Writes ``tokenize_layout.json`` and ``tokenize_layout.md`` to --out.

On the GPU machine (builds the full-size checkpoint with layer scales 1.0 when missing; no Ray needed):

    python -m bench.tokenize_layout --out bench/results

CPU smoke run: ``python -m bench.tokenize_layout --tiny --device cpu --clips 24 --out /tmp/tl``.
Random weights: speed and agreement only, nothing about quality.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import ensure_scaled_checkpoint, machine, signal, sync  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.units import GIB  # noqa: E402

SR = 24_000  # Hz
ENCODE_GFLOP_PER_AUDIO_S = 5.3  # NOTES.md: matmuls and convolutions of one audio second's encode
log = logging.getLogger("bench")

# (label, clips per call, length order, padded audio seconds per call)
VARIANTS = (
    ("before: 32 clips as they come, 60 s a call", 32, False, 60.0),
    ("32 clips in length order, 60 s a call", 32, True, 60.0),
    ("128 clips in length order, 240 s a call", 128, True, 240.0),
    ("128 clips in length order, 480 s a call", 128, True, 480.0),
    ("128 clips in length order, 960 s a call", 128, True, 960.0),
    ("256 clips in length order, 960 s a call", 256, True, 960.0),
)


def clips_of(count: int, min_s: float, max_s: float, device: str) -> list[np.ndarray]:
    lengths = np.random.default_rng(0).uniform(min_s, max_s, count)
    return [signal(float(s), i, device) for i, s in enumerate(lengths)]


def calls(clips: list[np.ndarray], per_call: int, ordered: bool) -> list[list[int]]:
    order = sorted(range(len(clips)), key=lambda i: -clips[i].size) if ordered else list(range(len(clips)))
    return [order[i : i + per_call] for i in range(0, len(order), per_call)]


def run_variant(checkpoint: str, device: str, clips, per_call: int, ordered: bool, budget_s: float) -> dict:
    engine = Engine(Settings(model=checkpoint, device=device, batch_audio_s=budget_s))
    assert engine.load(), engine.error
    groups = calls(clips, per_call, ordered)
    engine.encode_batch([SimpleNamespace(samples=clips[i]) for i in groups[0]])  # warm-up: this layout's shapes
    sync(device)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    codes: dict[int, np.ndarray] = {}
    for group in groups:
        for i, r in zip(group, engine.encode_batch([SimpleNamespace(samples=clips[i]) for i in group]), strict=True):
            codes[i] = r.codes
    sync(device)
    wall = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / GIB if device.startswith("cuda") else None
    profile = where_time_goes(engine, [clips[i] for i in groups[len(groups) // 2]], device)
    del engine
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return {"wall_s": wall, "peak_gib": peak, "profile": profile, "codes": codes}


def where_time_goes(engine, batch, device: str) -> dict | None:
    """GPU kernel time of one call by kind, against its wall time."""
    if not device.startswith("cuda"):
        return None
    from torch.profiler import ProfilerActivity, profile

    sync(device)
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        engine.encode_batch([SimpleNamespace(samples=c) for c in batch])
        sync(device)
    wall = time.perf_counter() - start
    kinds = {"convolution": 0.0, "matmul": 0.0, "elementwise": 0.0, "copy": 0.0, "other": 0.0}
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", 0.0) or getattr(e, "cuda_time_total", 0.0)
        if e.key.startswith("aten::") or us <= 0:
            continue
        name = e.key.lower()
        kind = (
            "convolution"
            if any(k in name for k in ("fprop", "conv", "implicit_gemm", "fft"))
            else "matmul"
            if "gemm" in name
            else "copy"
            if "copy" in name or "memcpy" in name or "cat" in name
            else "elementwise"
            if "elementwise" in name or "elu" in name
            else "other"
        )
        kinds[kind] += us / 1e6
    audio_s = sum(c.size for c in batch) / SR
    return {"wall_s": wall, "audio_s": audio_s, "kernel_s": kinds, "busy_share": sum(kinds.values()) / wall}


def agreement(checkpoint: str, device: str, clips, codes: dict[int, np.ndarray], sample: int) -> dict:
    engine = Engine(Settings(model=checkpoint, device=device))
    assert engine.load(), engine.error
    equal = total = same_clips = 0
    for i in range(min(sample, len(clips))):
        lone = engine.encode_array(clips[i]).codes
        ours = codes[i]
        same = int((ours == lone).sum()) if ours.shape == lone.shape else 0
        equal, total, same_clips = equal + same, total + lone.size, same_clips + int(same == lone.size)
    return {"clips": min(sample, len(clips)), "codes_equal_share": equal / max(total, 1), "clips_equal": same_clips}


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [
        "# The tokenize actor's model work by batch layout (strict fp32)",
        "",
        (
            f"{m.get('gpu') or m.get('cpu')}; torch {m.get('torch')}. {result['clips']} clips of "
            f"{result['min_s']:g}-{result['max_s']:g} s ({result['audio_s'] / 3600:.2f} audio h), 24 kHz arrays in, "
            f"`Engine.encode_batch` per call after a warm-up call. {result['checkpoint']} checkpoint, random weights, "
            f"layer scales 1.0: speed and agreement only. Written {result['date']}."
        ),
        "",
        "| layout | wall s | audio h per GPU-hour | peak GiB | one call: wall s, kernel busy share | conv / matmul / elementwise / copy / other kernel s |",
        "|---|---|---|---|---|---|",
    ]
    for v in result["variants"]:
        p = v.get("profile")
        busy = f"{p['wall_s']:.3f}, {100 * p['busy_share']:.0f}%" if p else "-"
        split = " / ".join(f"{s:.3f}" for s in p["kernel_s"].values()) if p else "-"
        peak = f"{v['peak_gib']:.1f}" if v.get("peak_gib") else "-"
        lines.append(f"| {v['label']} | {v['wall_s']:.2f} | {v['rate']:.0f} | {peak} | {busy} | {split} |")
    a = result["agreement"]
    lines += [
        "",
        (
            f"Codes of the fastest layout against lone encodes (`Engine.encode_array`, strict fp32): "
            f"{100 * a['codes_equal_share']:.4f}% equal ({a['clips_equal']}/{a['clips']} clips identical)."
        ),
        "",
        (
            f"Arithmetic: {ENCODE_GFLOP_PER_AUDIO_S} GFLOP per audio second (NOTES.md), so R audio h per GPU-hour "
            "needs R x 5.3 GFLOP/s: 6,000 needs 31.8 TFLOP/s sustained in fp32 FFMA (no tensor cores in strict fp32); "
            "the convolution rate measured in the profile is the ceiling."
        ),
    ]
    for v in result["variants"]:
        p = v.get("profile")
        if p and p["kernel_s"]["convolution"] > 0:
            conv_tflops = ENCODE_GFLOP_PER_AUDIO_S * 0.77 * p["audio_s"] / p["kernel_s"]["convolution"] / 1e3
            lines.append(
                f"- {v['label']}: convolutions ≈{conv_tflops:.1f} TFLOP/s (77% of the FLOPs are convolutions)."
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="/tmp/full-ls1")
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--clips", type=int, default=1024)
    p.add_argument("--min-s", type=float, default=6.0)
    p.add_argument("--max-s", type=float, default=20.0)
    p.add_argument("--variants", default="", help="comma-separated indices into VARIANTS (default: all)")
    p.add_argument("--agreement-clips", type=int, default=64)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    checkpoint = Path(args.checkpoint)
    ensure_scaled_checkpoint(checkpoint, args.tiny)
    clips = clips_of(args.clips, args.min_s, args.max_s, args.device)
    audio_s = sum(c.size for c in clips) / SR
    chosen = [VARIANTS[int(i)] for i in args.variants.split(",")] if args.variants else list(VARIANTS)
    result: dict = {
        "clips": args.clips,
        "min_s": args.min_s,
        "max_s": args.max_s,
        "audio_s": audio_s,
        "checkpoint": "Tiny" if args.tiny else "Full-size",
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(args.device),
        "variants": [],
    }
    best: dict | None = None
    for label, per_call, ordered, budget_s in chosen:
        row = run_variant(str(checkpoint), args.device, clips, per_call, ordered, budget_s)
        codes = row.pop("codes")
        row.update(label=label, per_call=per_call, ordered=ordered, budget_s=budget_s, rate=audio_s / row["wall_s"])
        log.info("%s", row)
        result["variants"].append(row)
        if best is None or row["wall_s"] < best["wall_s"]:
            best, best_codes = row, codes
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "tokenize_layout.json").write_text(json.dumps(result, indent=2) + "\n")
    result["agreement"] = agreement(str(checkpoint), args.device, clips, best_codes, args.agreement_clips)
    (args.out / "tokenize_layout.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "tokenize_layout.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
