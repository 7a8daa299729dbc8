"""Speed levers, measured one at a time on the GPU (what docs/performance.md reports as kept or
dropped): cuDNN autotuning, TF32 matmuls, decode chunk size, bf16, a compiled SnakeBeta, and a
kernel profile of one decode. Writes ``<out>/levers.json``.

    python -m bench.levers --checkpoint /tmp/full --out bench/results
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import official_decode, official_encode, signal  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.nn import decoding, encoding, kernels  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("levers")


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def best_of(fn, repeats: int = 2) -> float:
    """Lowest wall time of ``repeats`` calls (the first may include autotuning)."""
    times = []
    for _ in range(repeats):
        _sync()
        start = time.perf_counter()
        fn()
        _sync()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--seconds", type=float, default=600.0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--compile", action="store_true", help="also try a torch.compile'd SnakeBeta")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument(
        "--snake-only", action="store_true", help="only time our decode with and without the fused SnakeBeta"
    )
    args = p.parse_args(argv)
    results: dict = {}
    x = signal(args.seconds, 1, args.device)
    for dtype in args.dtypes.split(","):
        engine = Engine(Settings(model=str(args.checkpoint), device=args.device, dtype=dtype))
        assert engine.load(), engine.error
        tok, model = engine._tokenizer, engine.model
        codes = engine.encode_array(x).codes
        codes_t = torch.from_numpy(codes)
        r: dict = {}
        if args.snake_only:
            with torch.inference_mode():
                for frames in (300, 600):
                    r[f"ours_decode_fused_snake_chunk_{frames}"] = best_of(
                        lambda: decoding.decode(model, codes_t, frames)
                    )
                kernel, kernels._SNAKE_KERNEL = kernels._SNAKE_KERNEL, False  # the module's own SnakeBeta
                try:
                    r["ours_decode_unfused_snake_chunk_300"] = best_of(lambda: decoding.decode(model, codes_t, 300))
                finally:
                    kernels._SNAKE_KERNEL = kernel
            r["official_decode"] = best_of(lambda: official_decode(tok, codes))
            log.info("[%s] %s", dtype, {k: round(v, 4) for k, v in r.items()})
            results[dtype] = r
            engine.unload()
            tok = model = None  # the next dtype loads its own (the lambdas above ran already)
            torch.cuda.empty_cache()
            continue
        for bench_flag in (False, True):
            torch.backends.cudnn.benchmark = bench_flag
            with torch.inference_mode():
                r[f"ours_decode_benchmark_{bench_flag}"] = best_of(lambda: decoding.decode(model, codes_t, 300))
                r[f"ours_encode_benchmark_{bench_flag}"] = best_of(
                    lambda: encoding.encode(model, torch.from_numpy(x), 20 * SAMPLE_RATE, kv_device_bytes=1280 << 20)
                )
            r[f"official_decode_benchmark_{bench_flag}"] = best_of(lambda: official_decode(tok, codes))
            r[f"official_encode_benchmark_{bench_flag}"] = best_of(lambda: official_encode(tok, x))
            log.info("[%s] benchmark=%s %s", dtype, bench_flag, {k: round(v, 3) for k, v in r.items()})
        torch.backends.cudnn.benchmark = True
        with torch.inference_mode():
            for frames in (150, 600, 1200):
                r[f"ours_decode_chunk_{frames}"] = best_of(lambda: decoding.decode(model, codes_t, frames))
            torch.backends.cuda.matmul.allow_tf32 = True
            tf32_codes = encoding.encode(model, torch.from_numpy(x), 20 * SAMPLE_RATE).cpu().numpy()
            r["ours_encode_tf32_matmul"] = best_of(
                lambda: encoding.encode(model, torch.from_numpy(x), 20 * SAMPLE_RATE)
            )
            r["ours_decode_tf32_matmul"] = best_of(lambda: decoding.decode(model, codes_t, 300))
            torch.backends.cuda.matmul.allow_tf32 = False
        r["tf32_matmul_agreement_vs_official"] = float(np.mean(tf32_codes == official_encode(tok, x)))
        r["fp32_chunked_agreement_vs_official"] = float(np.mean(codes == official_encode(tok, x)))
        log.info("[%s] %s", dtype, {k: round(v, 4) for k, v in r.items()})

        from torch.profiler import ProfilerActivity, profile

        short = codes_t[:750]
        activity = ProfilerActivity.CUDA if torch.cuda.is_available() else ProfilerActivity.CPU
        with torch.inference_mode(), profile(activities=[activity]) as prof:
            decoding.decode(model, short, 300)
            _sync()
        table = prof.key_averages().table(
            sort_by="cuda_time_total" if torch.cuda.is_available() else "cpu_time_total",
            row_limit=18,
            max_name_column_width=70,
        )
        print(f"[{dtype}] decode 60 s kernel profile\n{table}")
        r["profile_decode_60s"] = table

        if args.compile and dtype == "float32":
            from qwen_tts.core.tokenizer_12hz import modeling_qwen3_tts_tokenizer_v2 as m

            original = m.SnakeBeta.forward

            @torch.compile(dynamic=True)
            def snake(x, alpha, beta, eps: float):
                a = torch.exp(alpha)[None, :, None]
                b = torch.exp(beta)[None, :, None]
                return x + (1.0 / (b + eps)) * torch.sin(x * a) ** 2

            m.SnakeBeta.forward = lambda self, x: snake(x, self.alpha, self.beta, self.no_div_by_zero)
            start = time.perf_counter()
            with torch.inference_mode():
                compiled = decoding.decode(model, codes_t[:300], 300)
                r["compile_first_call_s"] = time.perf_counter() - start
                r["ours_decode_compiled_snake"] = best_of(lambda: decoding.decode(model, codes_t, 300))
                m.SnakeBeta.forward = original
                plain = decoding.decode(model, codes_t[:300], 300)
            r["compiled_snake_max_abs_diff"] = float((compiled - plain).abs().max())
            log.info("[%s] compiled snake %s", dtype, {k: r[k] for k in r if "compile" in k})
        results[dtype] = r
        engine.unload()
        tok = model = None  # the next dtype loads its own (the lambdas above ran already)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    args.out.mkdir(parents=True, exist_ok=True)
    name = "levers-snake.json" if args.snake_only else "levers.json"
    (args.out / name).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
