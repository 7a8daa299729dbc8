"""Round-trip speed: ours (the engine, per decode variant) against the official ``Qwen3TTSTokenizer``
path, side by side in one process on one device; writes ``speed_bench-<device>.{json,md}``.

    python -m bench.speed_bench --device cuda:0 --checkpoint /tmp/full --out bench/results   # H200
    python -m bench.speed_bench --device cpu --checkpoint /tmp/full --out bench/results      # 2-core CPU

The checkpoint is the full-size random one (built when missing) with every transformer layer scale
set to 1.0 in memory, so context matters (NOTES.md). The official path runs with PyTorch defaults
(TF32 convolutions on a GPU); our engine runs with its own settings (full-fp32 encodes). Per length,
each side runs ``--repeats`` times and the median is reported. Variants differ only in how the
decoder runs (``core.nn.fast_decode``): eager or compiled, fp32 or bf16 with the guard, convolutions
channels-first or channels-last (``core.nn.conv_layout``; "eager" is the engine's default for the device:
channels-last on CPU, channels-first on a GPU), cuDNN autotuning on or off. Each variant's
codes are compared with the official encode in full fp32, its audio with our eager fp32 decode.
Random weights: nothing here says anything about audio quality.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    agreement,
    ensure_checkpoint,
    error_stats,
    full_fp32,
    official_decode,
    official_encode,
    set_layer_scales,
    signal,
    sync,
)
from core.model.engine import Engine  # noqa: E402
from core.nn import fast_decode  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.units import MIB  # noqa: E402

log = logging.getLogger("bench.speed")
LAST_PEAK_MIB: float | None = None  # peak allocated device memory of the last ``median_timed`` (MiB)

# name -> (decode dtype, compile mode or None, channels-last convolutions or None for the device's
# default (core.nn.fast_decode: on CPU only), cuDNN autotuning)
VARIANTS = {
    "eager": ("float32", None, None, False),
    "eager-cf": ("float32", None, False, False),
    "eager-cl": ("float32", None, True, False),
    "eager-cl-autotune": ("float32", None, True, True),
    "compiled": ("float32", "default", None, False),
    "compiled-cl": ("float32", "default", True, False),
    "cudagraphs": ("float32", "reduce-overhead", None, False),
    "bf16": ("bfloat16", None, None, False),
    "bf16-cl": ("bfloat16", None, True, False),
    "bf16-compiled": ("bfloat16", "default", None, False),
}


def median_timed(fn, repeats: int, device: str):
    """(last result, median seconds, all seconds) of ``repeats`` calls of ``fn``; the device's peak
    allocated memory over the calls is in ``LAST_PEAK_MIB`` (None on CPU)."""
    global LAST_PEAK_MIB
    times, out = [], None
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats(torch.device(device))
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        out = fn()
        sync(device)
        times.append(time.perf_counter() - start)
    LAST_PEAK_MIB = torch.cuda.max_memory_allocated(torch.device(device)) / MIB if cuda else None
    return out, statistics.median(times), times


def run(args) -> dict:
    device = args.device
    ensure_checkpoint(Path(args.checkpoint))
    settings = Settings(model=str(args.checkpoint), device=device, decode_chunk_frames=args.chunk_frames)
    engine = Engine(settings)
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    tok = engine._tokenizer  # the official wrapper around the very same model object
    eager = engine._fast
    assert tok is not None and eager is not None
    set_layer_scales(tok.model, 1.0)
    rows: list[dict] = []
    result = {"meta": _meta(args), "rows": rows}
    for seconds in args.lengths:
        x = signal(seconds, 1, device)
        official_decode(tok, official_encode(tok, x))  # warm-up at this length
        off_codes, off_enc, off_enc_all = median_timed(lambda x=x: official_encode(tok, x), args.repeats, device)
        off_enc_peak = LAST_PEAK_MIB
        _, off_dec, off_dec_all = median_timed(lambda c=off_codes: official_decode(tok, c), args.repeats, device)
        with full_fp32():
            strict = official_encode(tok, x)
        row = {
            "seconds": seconds,
            "official": {
                "encode_s": off_enc,
                "decode_s": off_dec,
                "encode_all": off_enc_all,
                "encode_peak_mib": off_enc_peak,
                "decode_all": off_dec_all,
            },
            "variants": {},
        }
        reference = None
        for name in args.variants:
            dtype, mode, layout, autotune = VARIANTS[name]
            if device == "cpu" and mode == "reduce-overhead":
                continue
            torch.backends.cudnn.benchmark = autotune
            options = fast_decode.DecodeOptions(dtype, mode is not None, mode or "default", layout)
            fast = eager if name == "eager" else fast_decode.FastDecoder(tok.model.decoder, options)
            engine._fast = fast
            compile_s = None
            if mode is not None:
                start = time.perf_counter()
                fast.warm([(1, args.chunk_frames)])
                compile_s = time.perf_counter() - start
            engine.decode(engine.encode_array(x).codes)  # warm-up
            codes, enc_s, enc_all = median_timed(lambda x=x: engine.encode_array(x).codes, args.repeats, device)
            enc_peak = LAST_PEAK_MIB
            decoded, dec_s, dec_all = median_timed(lambda c=codes: engine.decode(c), args.repeats, device)
            if name == "eager":
                reference = decoded.samples
            entry = {
                "encode_s": enc_s,
                "decode_s": dec_s,
                "encode_all": enc_all,
                "decode_all": dec_all,
                "compile_s": compile_s,
                "encode_peak_mib": enc_peak,
                "decode_peak_mib": LAST_PEAK_MIB,
                "warnings": list(decoded.warnings),
                "speedup": (off_enc + off_dec) / (enc_s + dec_s),
                "codes_agreement_vs_official_fp32": agreement(codes, strict),
                "codes_agreement_vs_official_default": agreement(codes, off_codes),
                "full_scale_share": float(np.mean(np.abs(decoded.samples) >= fast_decode.FULL_SCALE)),
                "channels_last": fast.convs is not None,
                "cudnn_benchmark": autotune,
            }
            if reference is not None:
                entry["audio_vs_eager_fp32"] = error_stats(decoded.samples, reference)
            row["variants"][name] = entry
            log.info("%g s %s: %s", seconds, name, {k: v for k, v in entry.items() if not k.endswith("_all")})
        torch.backends.cudnn.benchmark = False
        engine._fast = eager
        rows.append(row)
        log.info("%g s official: enc %.3f dec %.3f", seconds, off_enc, off_dec)
    return result


def _meta(args) -> dict:
    cuda = args.device.startswith("cuda")
    return {
        "device": args.device,
        "device_name": torch.cuda.get_device_name(torch.device(args.device))
        if cuda
        else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "checkpoint": str(args.checkpoint),
        "repeats": args.repeats,
        "chunk_frames": args.chunk_frames,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def markdown(result: dict) -> str:
    meta = result["meta"]
    lines = [
        f"# Round-trip speed: ours vs the official path ({meta['device_name']}, {meta['device']})",
        "",
        (
            f"torch {meta['torch']}, {meta['threads']} threads, median of {meta['repeats']} runs, {meta['date']}. "
            "Full-size random checkpoint, layer scales 1.0. Official path with PyTorch defaults. "
            "Random weights: nothing here is about audio quality."
        ),
        "",
        (
            "| length | variant | ours enc + dec s | official enc + dec s | speed-up | s per audio s (ours / official) "
            "| codes = official fp32 | audio vs eager fp32 (max abs / SNR) | compile s | bf16 chunks redone |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        f = row["official"]
        off = f["encode_s"] + f["decode_s"]
        for name, v in row["variants"].items():
            ours = v["encode_s"] + v["decode_s"]
            err = v.get("audio_vs_eager_fp32")
            err_s = (
                "—"
                if err is None
                else ("identical" if err["snr_db"] is None else f"{err['max_abs']:.1e} / {err['snr_db']:.1f} dB")
            )
            agree = v["codes_agreement_vs_official_fp32"]
            compiled = "—" if v["compile_s"] is None else f"{v['compile_s']:.1f}"
            lines.append(
                f"| {row['seconds']:g} s | {name} | {v['encode_s']:.3f} + {v['decode_s']:.3f} | "
                f"{f['encode_s']:.3f} + {f['decode_s']:.3f} | {off / ours:.2f}× | "
                f"{ours / row['seconds']:.4f} / {off / row['seconds']:.4f} | "
                f"{'—' if agree is None else f'{100 * agree:.4f}%'} | {err_s} | "
                f"{compiled} | {'yes' if v['warnings'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--checkpoint", default="/tmp/full")
    p.add_argument("--lengths", default=None, help="seconds, comma-separated (default: 10,600 on a GPU, 10 on CPU)")
    p.add_argument("--variants", default=None, help=f"comma-separated of {', '.join(VARIANTS)}")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--chunk-frames", type=int, default=300)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = p.parse_args(argv)
    cuda = args.device.startswith("cuda")
    args.lengths = [float(s) for s in (args.lengths or ("10,600" if cuda else "10")).split(",")]
    # eager is first: the others' audio is compared with it. CPU: no compile (no gain measured, minutes)
    default_variants = "eager,eager-cl,eager-cl-autotune,compiled,compiled-cl,bf16" if cuda else "eager,eager-cf,bf16"
    args.variants = (args.variants or default_variants).split(",")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    result = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "speed_bench-" + ("cuda" if cuda else "cpu")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (out / f"{stem}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
