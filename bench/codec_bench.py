"""Ours (core.model.engine) against the official ``qwen_tts.Qwen3TTSTokenizer`` path, side by side, in one
process on one device; writes ``bench/results/codec_bench.json`` and ``codec_bench.md``.

On the GPU machine (builds the full-size random checkpoint when it is missing):

    python -m bench.codec_bench --checkpoint /tmp/full --out bench/results

Both paths share one loaded model (the engine's own ``Qwen3TTSTokenizer``), so peak memory
figures (``torch.cuda.max_memory_allocated`` after a reset) include the same resident weights.
Per dtype it measures, for each length: encode and decode wall time, peak memory, token agreement
of our chunked encode with the official whole-clip encode, and, where a whole-utterance decode is
affordable, the error at every decode seam (both decoders decode the same codes). Then it sets
every transformer layer scale to 1.0 (random init leaves them at 0.01, which hides context; see
NOTES.md) and measures agreement and seams again. Random weights: nothing here is about quality.

CPU smoke run: ``python -m bench.codec_bench --tiny --device cpu --dtypes float32 --lengths 3,7
--context-lengths 7 --seam-lengths 7 --batch 3x1 --out /tmp/bench``.

``--output-rate 48000`` builds (when missing) the 48 kHz recipe of the family (one more ×2 decoder block,
``core.model.family``) and measures it the same way: decodes of 3,840 samples a frame against the official
48 kHz decode; every row and seam report records ``output_rate_hz``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs as a path too, like its siblings

from bench.codec_bench_report import markdown  # noqa: E402
from bench.harness import (  # noqa: E402
    ROOT,
    agreement,
    error_stats,
    full_fp32,
    is_oom,
    official_decode,
    official_encode,
    set_layer_scales,
    signal,
    timed,
    try_oom,
    whole_decode,
)
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.settings import Settings  # noqa: E402

SEAM_WINDOW_FRAMES = 25  # frames after each seam over which seam error is measured (2 s)

log = logging.getLogger("bench")


def seam_report(
    ours: np.ndarray, official: np.ndarray, whole: np.ndarray, chunk: int, per_frame: int = SAMPLES_PER_FRAME
) -> dict:
    """Errors after each seam; ``per_frame``: decoded samples a frame (3,840 for a 48 kHz decoder)."""
    frames = whole.size // per_frame
    seams = list(range(chunk, frames, chunk))
    per_seam = []
    for s in seams:
        lo, hi = s * per_frame, min(frames, s + SEAM_WINDOW_FRAMES) * per_frame
        per_seam.append(
            {
                "frame": s,
                "ours": error_stats(ours[lo:hi], whole[lo:hi]),
                "official": error_stats(official[lo:hi], whole[lo:hi]),
            }
        )
    return {
        "chunk_frames": chunk,
        "window_frames": SEAM_WINDOW_FRAMES,
        "seams": per_seam,
        "whole_clip": {"ours": error_stats(ours, whole), "official": error_stats(official, whole)},
    }


def seams_full_fp32(engine, tok, model, codes: np.ndarray, chunk_frames: int) -> dict:
    """Seam errors with every decode in full fp32, so TF32 rounding does not mask context effects."""
    with full_fp32():
        ours = engine.decode(codes).samples
        official = official_decode(tok, codes)
        whole = whole_decode(model, codes)
    return seam_report(ours, official, whole, chunk_frames, engine.output_samples_per_frame)


# ---- one dtype ---------------------------------------------------------------------------------
def run_dtype(args, dtype: str) -> dict:
    settings = Settings(model=str(args.checkpoint), device=args.device, dtype=dtype)
    engine = Engine(settings)
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    tok = engine._tokenizer  # the official wrapper around the very same model object
    assert tok is not None  # loaded above
    model = tok.model
    device = args.device
    chunk_frames = settings.decode_chunk_frames
    strict = dtype == "float32"
    per_frame = engine.output_samples_per_frame
    out: dict[str, Any] = {
        "dtype": dtype,
        "output_rate_hz": engine.output_rate,
        "settings": settings.to_dict(),
        "rows": [],
        "context_rows": [],
        "batch": None,
    }

    log.info("[%s] warm-up", dtype)
    for seconds in args.warmup:
        x = signal(seconds, 99, device)
        c = engine.encode_array(x).codes
        engine.decode(c)
        official_decode(tok, official_encode(tok, x))

    for seconds in args.lengths:
        x = signal(seconds, 1, device)
        repeats = 2 if seconds <= 60 else 1
        for _ in range(repeats):  # the last repeat is reported (the first may time cuDNN's autotuning)
            ours_codes, enc_s, enc_peak = timed(lambda: engine.encode_array(x).codes, device)
            ours_wav, dec_s, dec_peak = timed(lambda: engine.decode(ours_codes).samples, device)
        row = {
            "seconds": seconds,
            "output_rate_hz": engine.output_rate,
            "ours": {"encode_s": enc_s, "decode_s": dec_s, "encode_peak_mib": enc_peak, "decode_peak_mib": dec_peak},
        }
        off_codes = None
        try:
            for _ in range(repeats):
                off_codes, oenc_s, oenc_peak = timed(lambda: official_encode(tok, x), device)
            row["official"] = {"encode_s": oenc_s, "encode_peak_mib": oenc_peak}
        except Exception as e:  # the official whole-clip encode may not fit
            if not is_oom(e):
                raise
            row["official"] = {"encode_s": None, "encode_peak_mib": None, "encode_error": "out of memory"}
            torch.cuda.empty_cache()
        for _ in range(repeats):  # official decode of the same codes ours decoded
            off_wav, odec_s, odec_peak = timed(lambda: official_decode(tok, ours_codes), device)
        row["official"].update({"decode_s": odec_s, "decode_peak_mib": odec_peak})
        row["decode_vs_official"] = error_stats(ours_wav, off_wav[: ours_wav.size])  # the same codes, both decoders
        if strict:  # fp32: compare with the official encode in full fp32 too, and measure TF32's own effect
            with full_fp32():
                off_strict = try_oom(lambda: official_encode(tok, x))
            row["agreement"] = agreement(ours_codes, off_strict)
            row["agreement_vs_official_default"] = agreement(ours_codes, off_codes)
            row["official_tf32_vs_fp32"] = agreement(off_codes, off_strict)
            with full_fp32():  # the official fp32 encode again with cuDNN's autotuned algorithms
                torch.backends.cudnn.benchmark = True
                try:
                    off_tuned = try_oom(lambda: official_encode(tok, x))
                finally:
                    torch.backends.cudnn.benchmark = False
            row["official_fp32_algorithm_noise"] = agreement(off_strict, off_tuned)
        else:
            row["agreement"] = agreement(ours_codes, off_codes)
        if seconds in args.seam_lengths:
            mode = "default (TF32 convs)" if strict else "bf16"
            whole = whole_decode(model, ours_codes)
            row["seams"] = {mode: seam_report(ours_wav, off_wav, whole, chunk_frames, per_frame)}
            if strict:
                row["seams"]["full fp32"] = seams_full_fp32(engine, tok, model, ours_codes, chunk_frames)
        out["rows"].append(row)
        log.info("[%s] %s", dtype, _row_line(row))
        del x, ours_wav, off_wav
        engine.clear_vram()

    if args.batch:
        count, seconds = args.batch
        clips = [signal(seconds, 100 + i, device) for i in range(count)]
        from core.audio.files import audio_from_array

        audios = [audio_from_array(c, SAMPLE_RATE) for c in clips]
        for _ in range(2):
            enc, enc_s, enc_peak = timed(lambda: engine.encode_batch(audios), device)
            dec, dec_s, dec_peak = timed(lambda: engine.decode_batch([r.codes for r in enc]), device)
            oenc, oenc_s, oenc_peak = timed(lambda: tok.encode(clips, sr=SAMPLE_RATE), device)
            odec, odec_s, odec_peak = timed(lambda: tok.decode(oenc), device)
        agree = [agreement(r.codes, o.cpu().numpy()) for r, o in zip(enc, oenc.audio_codes, strict=True)]
        out["batch"] = {
            "clips": count,
            "seconds_each": seconds,
            "ours": {"encode_s": enc_s, "decode_s": dec_s, "encode_peak_mib": enc_peak, "decode_peak_mib": dec_peak},
            "official": {
                "encode_s": oenc_s,
                "decode_s": odec_s,
                "encode_peak_mib": oenc_peak,
                "decode_peak_mib": odec_peak,
            },
            "agreement_min": min(a for a in agree if a is not None),
        }
        log.info("[%s] batch %s", dtype, out["batch"])
        del enc, dec, oenc, odec
        engine.clear_vram()

    scales = set_layer_scales(model, 1.0)
    log.info("[%s] layer scales -> 1.0 (%d tensors): context now matters", dtype, scales)
    for seconds in args.context_lengths:
        x = signal(seconds, 2, device)
        ours_codes = engine.encode_array(x).codes
        precision = full_fp32() if strict else contextlib.nullcontext()
        with precision:
            off_codes = try_oom(lambda: official_encode(tok, x))
        row = {"seconds": seconds, "agreement": agreement(ours_codes, off_codes)}
        if strict:
            row["agreement_vs_official_default"] = agreement(ours_codes, try_oom(lambda: official_encode(tok, x)))
        naive_chunk = int(settings.encode_chunk_s * SAMPLE_RATE) // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME
        if seconds * SAMPLE_RATE > naive_chunk:  # what chunking without context would give
            with precision:
                naive = np.concatenate(
                    [official_encode(tok, x[i : i + naive_chunk]) for i in range(0, x.size, naive_chunk)]
                )
            row["naive_chunks_agreement"] = agreement(naive, off_codes)
        if seconds in args.seam_lengths:
            if strict:
                row["seams"] = {"full fp32": seams_full_fp32(engine, tok, model, ours_codes, chunk_frames)}
            else:
                row["seams"] = {
                    "bf16": seam_report(
                        engine.decode(ours_codes).samples,
                        official_decode(tok, ours_codes),
                        whole_decode(model, ours_codes),
                        chunk_frames,
                        per_frame,
                    )
                }
        out["context_rows"].append(row)
        log.info(
            "[%s] layer scale 1.0, %s s: agreement %s, naive %s",
            dtype,
            seconds,
            row["agreement"],
            row.get("naive_chunks_agreement"),
        )
        engine.clear_vram()
    engine.unload()
    tok = model = None  # free the model before the official path loads its own
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return out


def _row_line(row: dict) -> str:
    o, f = row["ours"], row["official"]
    return (
        f"{row['seconds']} s: ours {o['encode_s']:.3f}+{o['decode_s']:.3f} s "
        f"(peak {o['encode_peak_mib']}/{o['decode_peak_mib']} MiB), official "
        f"{f.get('encode_s')}+{f['decode_s']:.3f} s (peak {f.get('encode_peak_mib')}/{f['decode_peak_mib']} MiB), "
        f"agreement {row['agreement']}"
    )


# ---- main --------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", type=Path, default=Path("/tmp/codec-full"), help="checkpoint dir (built if missing)")
    p.add_argument("--reference", type=Path, default=ROOT / "core" / "model" / "reference-config.json")
    p.add_argument("--tiny", action="store_true", help="build the tiny checkpoint instead (smoke runs)")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--lengths", default="10,60,600,1800,3600", help="seconds, comma-separated")
    p.add_argument("--context-lengths", default="10,60,600", help="lengths measured with layer scales 1.0")
    p.add_argument("--seam-lengths", default="60,600", help="lengths whose seams are compared to a whole decode")
    p.add_argument("--warmup", default="10,60", help="lengths run once, unmeasured, per dtype")
    p.add_argument("--batch", default="32x10", help="COUNTxSECONDS batch row, or 'none'")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--name", default="codec_bench", help="results file stem")
    p.add_argument(
        "--output-rate", type=int, default=SAMPLE_RATE, help="decoder output rate of a checkpoint built here (48000)"
    )
    args = p.parse_args(argv)
    floats = lambda s: [float(v) for v in s.split(",") if v]  # noqa: E731
    args.lengths, args.context_lengths = floats(args.lengths), floats(args.context_lengths)
    args.seam_lengths, args.warmup = floats(args.seam_lengths), floats(args.warmup)
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    if args.batch.lower() == "none":
        args.batch = None
    else:
        n, s = args.batch.lower().split("x")
        args.batch = (int(n), float(s))
    return args


def main(argv=None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    if not (args.checkpoint / "config.json").is_file():
        from core.model.checkpoints import build_full_checkpoint, build_tiny_checkpoint

        start = time.perf_counter()
        if args.tiny:
            build_tiny_checkpoint(args.checkpoint, output_rate_hz=args.output_rate)
        else:
            build_full_checkpoint(args.checkpoint, reference=args.reference, output_rate_hz=args.output_rate)
        log.info("built checkpoint in %.1f s", time.perf_counter() - start)
    cuda = args.device.startswith("cuda")
    result: dict[str, Any] = {
        "meta": {
            "device": args.device,
            "device_name": torch.cuda.get_device_name(torch.device(args.device))
            if cuda
            else platform.processor() or "CPU",
            "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version() if cuda else None,
            "checkpoint": ("tiny random" if args.tiny else "full-size random (published config)")
            + (f", {args.output_rate} Hz decoder" if args.output_rate != SAMPLE_RATE else ""),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "seam_window_frames": SEAM_WINDOW_FRAMES,
            "argv": sys.argv[1:] if argv is None else argv,
        },
        "runs": [],
    }
    for dtype in args.dtypes:
        result["runs"].append(run_dtype(args, dtype))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    (args.out / f"{args.name}.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
