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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.model.engine import Engine  # noqa: E402
from core.nn import decoding  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.units import MIB  # noqa: E402

SR = 24_000  # Hz
FRAME = 1920  # samples per code frame
SEAM_WINDOW_FRAMES = 25  # frames after each seam over which seam error is measured (2 s)

log = logging.getLogger("bench")


# ---- helpers -----------------------------------------------------------------------------------
def signal(seconds: float, seed: int, device: str) -> np.ndarray:
    """Deterministic speech-like test signal (gliding harmonics, syllable envelope, noise), built on
    ``device`` so an hour takes no CPU time; float32 numpy, peak 0.5."""
    n = int(round(seconds * SR))
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(seed)
    t = torch.arange(n, device=dev, dtype=torch.float64) / SR
    f0 = 140 + 40 * torch.sin(2 * math.pi * 0.7 * t) + 20 * torch.sin(2 * math.pi * 0.05 * t + seed)
    phase = 2 * math.pi * torch.cumsum(f0, 0) / SR
    voiced = sum(torch.sin(k * phase) / k for k in range(1, 8))
    envelope = 0.5 * (1 + torch.sin(2 * math.pi * 3.0 * t + seed)) ** 2 / 4
    x = (0.35 * voiced * envelope).float() + 0.01 * torch.randn(n, generator=g, device=dev)
    x = 0.5 * x / x.abs().max().clamp_min(1e-9)
    out = x.cpu().numpy()
    del t, f0, phase, voiced, envelope, x
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return out


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def timed(fn, device: str):
    """(result, wall seconds, peak allocated MiB or None) of ``fn()``."""
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        sync(device)
        torch.cuda.reset_peak_memory_stats(torch.device(device))
    start = time.perf_counter()
    out = fn()
    sync(device)
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated(torch.device(device)) / MIB if device.startswith("cuda") else None
    return out, seconds, peak


class full_fp32:
    """Convolutions and matmuls in full fp32 (PyTorch lets cuDNN use TF32 for fp32 convolutions by default)."""

    def __enter__(self):
        self.previous = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False

    def __exit__(self, *exc):
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = self.previous


def try_oom(fn):
    """``fn()``, or None when it runs out of device memory."""
    try:
        return fn()
    except Exception as e:
        if not is_oom(e):
            raise
        torch.cuda.empty_cache()
        return None


def is_oom(e: BaseException) -> bool:
    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()


def official_encode(tok, x: np.ndarray) -> np.ndarray:
    enc = tok.encode(x, sr=SR)
    return enc.audio_codes[0].cpu().numpy()


def official_decode(tok, codes: np.ndarray) -> np.ndarray:
    wavs, _sr = tok.decode({"audio_codes": torch.from_numpy(codes)})
    return np.asarray(wavs[0], dtype=np.float32)


def whole_decode(model, codes: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return decoding.decode_whole(model, torch.from_numpy(codes)).float().cpu().numpy()


def error_stats(x: np.ndarray, ref: np.ndarray) -> dict:
    """Max abs difference and SNR (dB; None when identical) of ``x`` against ``ref``."""
    err = x.astype(np.float64) - ref.astype(np.float64)
    power = float(np.sum(err**2))
    snr = None if power == 0 else 10 * math.log10(max(float(np.sum(ref.astype(np.float64) ** 2)), 1e-30) / power)
    return {"max_abs": float(np.max(np.abs(err))) if err.size else 0.0, "snr_db": snr}


def seam_report(ours: np.ndarray, official: np.ndarray, whole: np.ndarray, chunk: int) -> dict:
    frames = whole.size // FRAME
    seams = list(range(chunk, frames, chunk))
    per_seam = []
    for s in seams:
        lo, hi = s * FRAME, min(frames, s + SEAM_WINDOW_FRAMES) * FRAME
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


def worst(seams: dict, who: str) -> tuple[float | None, float | None]:
    """(largest max-abs, lowest SNR) over all seams for ``who``."""
    rows = [s[who] for s in seams["seams"]]
    if not rows:
        return None, None
    snrs = [r["snr_db"] for r in rows]
    finite = [s for s in snrs if s is not None]
    return max(r["max_abs"] for r in rows), (min(finite) if finite else None)


def seams_full_fp32(engine, tok, model, codes: np.ndarray, chunk_frames: int) -> dict:
    """Seam errors with every decode in full fp32, so TF32 rounding does not mask context effects."""
    with full_fp32():
        ours = engine.decode(codes).samples
        official = official_decode(tok, codes)
        whole = whole_decode(model, codes)
    return seam_report(ours, official, whole, chunk_frames)


def agreement(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or a.shape != b.shape:
        return None
    return float(np.mean(a == b))


def set_layer_scales(model, value: float) -> int:
    count = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scale.scale"):
                p.fill_(value)
                count += 1
    return count


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
    out: dict[str, Any] = {
        "dtype": dtype,
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
            row["seams"] = {mode: seam_report(ours_wav, off_wav, whole_decode(model, ours_codes), chunk_frames)}
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

        audios = [audio_from_array(c, SR) for c in clips]
        for _ in range(2):
            enc, enc_s, enc_peak = timed(lambda: engine.encode_batch(audios), device)
            dec, dec_s, dec_peak = timed(lambda: engine.decode_batch([r.codes for r in enc]), device)
            oenc, oenc_s, oenc_peak = timed(lambda: tok.encode(clips, sr=SR), device)
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
        naive_chunk = int(settings.encode_chunk_s * SR) // FRAME * FRAME
        if seconds * SR > naive_chunk:  # what chunking without context would give
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


# ---- report ------------------------------------------------------------------------------------
def _fmt_s(v):
    return "—" if v is None else f"{v:.3f}"


def _fmt_gib(v):
    return "—" if v is None else f"{v / 1024:.2f}"


def _fmt_pct(v):
    return "—" if v is None else f"{100 * v:.4f}%"


def _fmt_len(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 600 else f"{seconds:g} s"


def _fmt_err(stats):
    if stats[0] is None:
        return "—"
    snr = "exact" if stats[1] is None else f"{stats[1]:.1f} dB"
    return f"{stats[0]:.2e} / {snr}"


def markdown(result: dict) -> str:
    meta = result["meta"]
    lines = [
        "# Codec benchmark: ours vs the official Qwen3TTSTokenizer path",
        "",
        f"Device: {meta['device_name']} ({meta['device']}); torch {meta['torch']}, cuDNN {meta['cudnn']}; "
        f"checkpoint: {meta['checkpoint']}. Generated by `python -m bench.codec_bench` on {meta['date']} "
        "(`bench/device_run.sh tests bench` on the GPU machine). "
        "Random weights: nothing here says anything about audio quality.",
        "",
        "Times are wall seconds from numpy in to numpy out, in the same process on the same loaded model; "
        "the official path runs with PyTorch defaults (TF32 convolutions in fp32). Peaks are "
        "`torch.cuda.max_memory_allocated` with the resident weights included. Speed-up: official round trip "
        "over ours; audio s/s: seconds of audio per second of round trip.",
        "",
        "Agreement: our chunked codes vs the official whole-clip encode. In fp32 it is measured with both in full fp32 "
        "(our engine encodes in full fp32); `vs TF32 official` compares with the official encode as run by default, "
        "`TF32 noise` is how far the official encode's own codes move between TF32 and full fp32; `fp32 noise` "
        "compares the official full-fp32 encode with itself re-run under cuDNN autotuning (other convolution "
        "algorithms). The random codebooks make the nearest-code search very sensitive to rounding. Agreement is "
        "100% wherever a clip fits in one transformer span (`encode_span_s`, 600 s); longer clips can differ in a few "
        "codes per 100,000, consistent with the transformer's matrix products and attention running on spans "
        "(other shapes, so other fp32 rounding) instead of the whole sequence at once.",
        "",
        "## Stock random init (layer scales 0.01)",
        "",
        "| dtype | length | ours enc s | ours dec s | official enc s | official dec s | speed-up | ours audio s/s "
        "| official audio s/s | ours enc peak GiB | official enc peak GiB | ours dec peak GiB | official dec peak GiB "
        "| agreement | vs TF32 official | TF32 noise | fp32 noise |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        for row in run["rows"]:
            o, f = row["ours"], row["official"]
            ours_rt = o["encode_s"] + o["decode_s"]
            off_rt = None if f.get("encode_s") is None else f["encode_s"] + f["decode_s"]
            speed = "—" if off_rt is None else f"{off_rt / ours_rt:.2f}×"
            off_speed = "—" if off_rt is None else f"{row['seconds'] / off_rt:.0f}"
            off_enc = _fmt_s(f.get("encode_s")) if f.get("encode_s") is not None else f.get("encode_error", "—")
            lines.append(
                f"| {run['dtype']} | {_fmt_len(row['seconds'])} | {_fmt_s(o['encode_s'])} | {_fmt_s(o['decode_s'])} | "
                f"{off_enc} | {_fmt_s(f['decode_s'])} | {speed} | {row['seconds'] / ours_rt:.0f} | {off_speed} | "
                f"{_fmt_gib(o['encode_peak_mib'])} | {_fmt_gib(f.get('encode_peak_mib'))} | "
                f"{_fmt_gib(o['decode_peak_mib'])} | {_fmt_gib(f['decode_peak_mib'])} | {_fmt_pct(row['agreement'])} | "
                f"{_fmt_pct(row.get('agreement_vs_official_default'))} | {_fmt_pct(row.get('official_tf32_vs_fp32'))} | "
                f"{_fmt_pct(row.get('official_fp32_algorithm_noise'))} |"
            )
    batch_rows = [(r["dtype"], r["batch"]) for r in result["runs"] if r.get("batch")]
    if batch_rows:
        lines += [
            "",
            "## Batch of short clips",
            "",
            "| dtype | clips | ours enc s | ours dec s | official enc s | official dec s | ours peak GiB (enc/dec) "
            "| official peak GiB (enc/dec) | min agreement (vs TF32 official in fp32) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for dtype, b in batch_rows:
            o, f = b["ours"], b["official"]
            lines.append(
                f"| {dtype} | {b['clips']} × {b['seconds_each']:g} s | {_fmt_s(o['encode_s'])} | {_fmt_s(o['decode_s'])} | "
                f"{_fmt_s(f['encode_s'])} | {_fmt_s(f['decode_s'])} | {_fmt_gib(o['encode_peak_mib'])} / "
                f"{_fmt_gib(o['decode_peak_mib'])} | {_fmt_gib(f['encode_peak_mib'])} / {_fmt_gib(f['decode_peak_mib'])} | "
                f"{_fmt_pct(b['agreement_min'])} |"
            )
    lines += [
        "",
        "## Context made to matter (every transformer layer scale set to 1.0)",
        "",
        "| dtype | length | agreement | vs TF32 official | naive chunks agreement |",
        "|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        for row in run["context_rows"]:
            lines.append(
                f"| {run['dtype']} | {_fmt_len(row['seconds'])} | {_fmt_pct(row['agreement'])} | "
                f"{_fmt_pct(row.get('agreement_vs_official_default'))} | "
                f"{_fmt_pct(row.get('naive_chunks_agreement'))} |"
            )
    lines += [
        "",
        "## Decode seams against a whole-utterance decode of the same codes",
        "",
        f"Ours and the official path both cut at every 300 frames. Per seam: the {SEAM_WINDOW_FRAMES} frames "
        "(2 s) after it; cells give the worst seam (largest max abs difference / lowest SNR) and the whole clip. "
        "Per-seam figures are in the JSON.",
        "",
        "| dtype | init | convolutions | length | seams | ours worst seam | official worst seam | ours whole clip "
        "| official whole clip |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        for init, rows in (("stock", run["rows"]), ("layer scale 1.0", run["context_rows"])):
            for row in rows:
                for mode, seams in (row.get("seams") or {}).items():
                    whole = seams["whole_clip"]
                    lines.append(
                        f"| {run['dtype']} | {init} | {mode} | {_fmt_len(row['seconds'])} | {len(seams['seams'])} | "
                        f"{_fmt_err(worst(seams, 'ours'))} | {_fmt_err(worst(seams, 'official'))} | "
                        f"{_fmt_err((whole['ours']['max_abs'], whole['ours']['snr_db']))} | "
                        f"{_fmt_err((whole['official']['max_abs'], whole['official']['snr_db']))} |"
                    )
    lines.append("")
    return "\n".join(lines)


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
            build_tiny_checkpoint(args.checkpoint)
        else:
            build_full_checkpoint(args.checkpoint, reference=args.reference)
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
            "checkpoint": "tiny random" if args.tiny else "full-size random (published config)",
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
