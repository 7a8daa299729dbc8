"""Where a decode's time goes: one 300-frame chunk (24 s of audio) through the streaming decoder, per
layout, under the PyTorch profiler; writes ``decode_profile-<device>.{json,md}``.

    python -m bench.decode_profile --checkpoint /tmp/full --device cuda:0 --out bench/results

For each layout (channels-first, channels-last; eager, fp32 with PyTorch's default TF32 convolutions)
it reports the chunk's wall time, the device time by kernel family (convolutions, SnakeBeta,
elementwise, attention and matmuls, copies) and the convolutions' achieved TFLOP/s from their FLOPs
(``torch.utils.flop_counter``). This is what tells how far a decoder speed-up can go: the official path
runs the same convolutions. Random weights: nothing here is about audio quality.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import ensure_checkpoint, set_layer_scales, sync  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.nn import fast_decode  # noqa: E402
from core.settings import Settings  # noqa: E402

FAMILIES = (  # first match wins; names of CUDA kernels (cuDNN, cuBLAS, Triton, ATen) and CPU ops
    ("convolution", ("conv", "cudnn", "implicit", "sm90_xmma", "xmma", "winograd", "fft", "mkldnn")),
    ("snake", ("snake",)),
    ("attention/matmul", ("gemm", "attention", "flash", "fmha", "addmm", "aten::mm", "bmm")),
    ("copy/cat", ("copy", "cat", "memcpy", "transpose", "nchw", "nhwc")),
)


def family(name: str) -> str:
    lower = name.lower()
    for fam, keys in FAMILIES:
        if any(k in lower for k in keys):
            return fam
    return "elementwise/other"


def profile_layout(engine, layout: bool, frames: int, device: str) -> dict:
    fast = fast_decode.FastDecoder(engine.model.decoder, fast_decode.DecodeOptions("float32", channels_last=layout))
    codes = torch.randint(0, 2048, (1, 16, frames), device=device)
    with torch.inference_mode():
        for _ in range(2):  # warm-up: kernels loaded, algorithms picked
            fast.step(fast.stream(1), codes)
        sync(device)
        start = time.perf_counter()
        for _ in range(3):
            fast.step(fast.stream(1), codes)
        sync(device)
        wall_s = (time.perf_counter() - start) / 3
        with FlopCounterMode(display=False) as counter:
            fast.step(fast.stream(1), codes)
        conv_flops = sum(v for k, v in counter.get_flop_counts()["Global"].items() if "convolution" in str(k))
        cuda = device.startswith("cuda")
        activities = [ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
        with profile(activities=activities) as prof:
            fast.step(fast.stream(1), codes)
            sync(device)
    by_family: dict[str, float] = defaultdict(float)
    kernels: dict[str, float] = defaultdict(float)
    for ev in prof.key_averages():
        t = (ev.self_device_time_total if cuda else ev.self_cpu_time_total) / 1e6
        if t <= 0 or (cuda and ev.device_type != torch.autograd.DeviceType.CUDA):
            continue
        by_family[family(ev.key)] += t
        kernels[ev.key[:90]] += t
    conv_s = by_family.get("convolution", 0.0)
    return {
        "channels_last": layout,
        "wall_s": wall_s,
        "device_s": sum(by_family.values()),
        "by_family_s": dict(sorted(by_family.items(), key=lambda kv: -kv[1])),
        "conv_tflop": conv_flops / 1e12,
        "conv_tflops_achieved": conv_flops / 1e12 / conv_s if conv_s else None,
        "top_kernels_s": dict(sorted(kernels.items(), key=lambda kv: -kv[1])[:15]),
    }


def markdown(result: dict) -> str:
    lines = [
        f"# Decode profile: one {result['frames']}-frame chunk ({result['frames'] / 12.5:g} s of audio), {result['device_name']}",
        "",
        f"torch {result['torch']}, {result['date']}, eager fp32 (TF32 convolutions allowed: {result['tf32_conv']}).",
        "",
        "| layout | wall s | device s | convolution s | conv TFLOP | conv TFLOP/s | snake s | attention/matmul s | copy/cat s | other s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["layouts"]:
        f = r["by_family_s"]
        tf = "—" if r["conv_tflops_achieved"] is None else f"{r['conv_tflops_achieved']:.3g}"
        lines.append(
            f"| {'channels-last' if r['channels_last'] else 'channels-first'} | {r['wall_s']:.4f} | {r['device_s']:.4f} | "
            f"{f.get('convolution', 0):.4f} | {r['conv_tflop']:.2f} | {tf} | {f.get('snake', 0):.4f} | "
            f"{f.get('attention/matmul', 0):.4f} | {f.get('copy/cat', 0):.4f} | {f.get('elementwise/other', 0):.4f} |"
        )
    for r in result["layouts"]:
        lines += ["", f"Top kernels, {'channels-last' if r['channels_last'] else 'channels-first'}:", ""]
        lines += [f"- {s * 1e3:.2f} ms `{k}`" for k, s in r["top_kernels_s"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--checkpoint", default="/tmp/full")
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = p.parse_args(argv)
    ensure_checkpoint(Path(args.checkpoint))
    engine = Engine(Settings(model=args.checkpoint, device=args.device))
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    set_layer_scales(engine.model, 1.0)
    cuda = args.device.startswith("cuda")
    result = {
        "device": args.device,
        "device_name": torch.cuda.get_device_name(torch.device(args.device)) if cuda else "CPU",
        "torch": torch.__version__,
        "tf32_conv": torch.backends.cudnn.allow_tf32,
        "frames": args.frames,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "layouts": [profile_layout(engine, layout, args.frames, args.device) for layout in (False, True)],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "decode_profile-" + ("cuda" if cuda else "cpu")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (out / f"{stem}.md").write_text(markdown(result))
    sys.stdout.write(markdown(result))


if __name__ == "__main__":
    main()
