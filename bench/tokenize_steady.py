"""Dataset tokenization at steady state: 1 encode actor against N (one GPU each) on the same files, each
run long enough for at least 60 s between its first and last result, strict fp32 and TF32, with the
official ``finetuning/prepare_data.py`` loop on one GPU in the same run; the codes of a sample of output
rows checked against lone encodes (what ``python -m core encode`` runs). Writes ``tokenize_steady.json``
and ``tokenize_steady.md`` to --out.

The successor of ``bench/tokenize_bench.py`` for the question "does a second GPU pay": that
bench's sets were short (7-16 s of steady state). On the GPU machine, in one call:

    python -m bench.tokenize_steady --files 7000 --min-s 6 --max-s 20 --gpus 1,2 --out bench/results

(``--gpus 1,2`` runs the two-actor rows only where the machine has two GPUs.) CPU smoke run:
``python -m bench.tokenize_steady --tiny --device cpu --files 12 --gpus 0 --out /tmp/ts``.
Random weights, layer scales 1.0: throughput and agreement only, nothing about quality.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import ensure_scaled_checkpoint, signal  # noqa: E402
from bench.tokenize_bench import FILE_SR, HOUR_S, _to_16k, per_gpu_hour, pipeline_run  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("bench")
AGREEMENT_SAMPLE = 128  # output rows whose codes are checked against lone encodes, per run (spread over shards)
ENCODE_GFLOP_PER_AUDIO_S = 5.3  # NOTES.md: the encode's matmuls and convolutions per audio second


def make_files(folder: Path, count: int, seed: int, device: str, min_s: float, max_s: float) -> Path:
    """``count`` 16 kHz speech-like WAVs and a fine-tuning JSONL, the signal built on ``device`` and the
    resampling and writing spread over the machine's cores (soxr and libsndfile release the GIL)."""
    folder.mkdir(parents=True, exist_ok=True)
    lengths = np.random.default_rng(seed).uniform(min_s, max_s, count)

    def write(i: int, x: np.ndarray) -> str:
        path = folder / f"utt{i:05d}.wav"
        sf.write(path, _to_16k(x), FILE_SR, subtype="PCM_16")
        return json.dumps({"audio": str(path), "text": f"utterance {i}", "language": "English"})

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = [pool.submit(write, i, signal(float(s), seed + i, device)) for i, s in enumerate(lengths)]
        lines = [f.result() for f in futures]
    manifest = folder / "train.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def official_loop(checkpoint: str, manifest: Path, device: str) -> dict:
    from bench.tokenize_bench import official_loop as loop

    result = loop(checkpoint, manifest, device)
    result.pop("tok")
    return result


def agreement(out: Path, checkpoint: str, device: str) -> dict:
    """Codes of the first rows of the first shard against ``Engine.encode_array`` of the same files with the
    engine's defaults (strict fp32): what ``python -m core encode`` gives."""
    import pyarrow.parquet as pq

    from core.audio.files import load_audio
    from core.model.engine import Engine

    files = sorted((out / "shards").glob("*.parquet"))
    each = -(-AGREEMENT_SAMPLE // len(files))
    rows = [r for f in files for r in pq.read_table(f, columns=["audio", "audio_codes"]).slice(0, each).to_pylist()]
    rows = rows[:AGREEMENT_SAMPLE]
    engine = Engine(Settings(model=checkpoint, device=device))
    assert engine.load(), engine.error
    equal = total = clips_equal = 0
    for row in rows:
        ours = np.asarray(row["audio_codes"], dtype=np.int64)
        lone = engine.encode_array(load_audio(row["audio"]).samples).codes.astype(np.int64)
        same = int((ours == lone).sum()) if ours.shape == lone.shape else 0
        equal, total, clips_equal = equal + same, total + lone.size, clips_equal + int(same == lone.size)
    del engine
    return {"clips": len(rows), "codes_equal_share": equal / max(total, 1), "clips_equal": clips_equal}


def machine() -> dict:
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    smi = ""
    if gpus:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    import ray

    return {
        "gpus": gpus,
        "nvidia_smi": smi,
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "ray": ray.__version__,
        "python": platform.python_version(),
    }


def _rate(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.2f}"


def markdown(result: dict) -> str:
    m, o = result["machine"], result.get("official")
    unit = "audio h per GPU-hour" if m["gpus"] else "audio h per hour (x real time)"
    gpus = f"{len(m['gpus'])} x {m['gpus'][0]}" if m["gpus"] else "no GPU"
    lines = [
        "# Dataset tokenization at steady state: 1 vs N GPUs",
        "",
        (
            f"{gpus}, {m['cpus']} CPU cores; torch {m['torch']}, "
            f"ray {m['ray']}, Python {m['python']}. {result['files']} 16 kHz speech-like files of "
            f"{result['min_s']:g}-{result['max_s']:g} s, {result['audio_s'] / HOUR_S:.2f} audio hours. {result['checkpoint']} "
            "checkpoint, random weights, transformer layer scales 1.0: throughput and agreement only, nothing about "
            f"quality. Written {result['date']}."
        ),
        "",
        f"| path | GPUs | wall s | first result s | steady s | {unit}, whole run | {unit}, steady | GPU utilisation, steady | codes equal to lone encodes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    if o:
        lines.append(
            f"| official prepare_data loop (batch 32, model loaded and warm, PyTorch's default TF32 convs) | "
            f"{1 if m['gpus'] else 0} | {o['wall_s']:.1f} | - | - | {_rate(per_gpu_hour(result['audio_s'], o['wall_s'], 1))} "
            "| - | - | - |"
        )
    for p in result.get("pipeline", []):
        mode = "strict fp32" if p["strict_fp32"] else "TF32"
        use = ", ".join(f"{u:.0f}%" for u in p["gpu_utilisation"]) if p.get("gpu_utilisation") else "-"
        agree = p.get("agreement")
        agree_text = f"{100 * agree['codes_equal_share']:.4f}% ({agree['clips']} clips)" if agree else "-"
        # a job whose results came in one or two calls has no steady state to speak of
        steady = (
            "-" if p["steady_s"] < 0.2 * p["wall_s"] else _rate(per_gpu_hour(p["audio_s"], p["steady_s"], p["gpus"]))
        )
        lines.append(
            f"| ours, `python -m core tokenize` ({mode}), {p['actors']} actor(s) | {p['gpus']} | {p['wall_s']:.1f} | "
            f"{p['first_result_s']:.1f} | {p['steady_s']:.1f} | {_rate(per_gpu_hour(p['audio_s'], p['wall_s'], p['gpus']))} | "
            f"{steady} | {use} | {agree_text} |"
        )
    if o:
        for p in result.get("pipeline", []):
            whole = o["wall_s"] / p["wall_s"] * max(p["gpus"], 1)
            lines += [
                "",
                f"{'strict fp32' if p['strict_fp32'] else 'TF32'}, {p['actors']} actor(s): whole run **{whole:.2f}x** "
                "the official loop's audio per GPU-hour (ours counts Ray's start and the model's load; the official "
                "loop's model was loaded and warm).",
            ]
    if any(p["gpus"] == 0 for p in result.get("pipeline", [])):
        lines += [
            "",
            f"CPU rows: the encode actor runs torch on every core ({m['cpus']}) and decode tasks take turns beside "
            "it (core/dataset/layout.py); the official loop runs torch with its default threads on the same cores. "
            "The whole run counts the local Ray's start, which on a 2-core machine is a large share of a short job.",
        ]
    lines += [
        "",
        (
            f"Arithmetic: the encode is ≈{ENCODE_GFLOP_PER_AUDIO_S} GFLOP per audio second (NOTES.md), so R audio h "
            f"per GPU-hour needs R x {ENCODE_GFLOP_PER_AUDIO_S} GFLOP/s: 6,000 needs ≈31.8 TFLOP/s sustained. Strict "
            "fp32 uses no tensor cores: the convolutions run as fp32 FFMA implicit GEMMs, measured at ≈22 TFLOP/s "
            "(bench/results/tokenize_bench.md), which caps the model at ≈22e12 / 5.3e9 ≈ 4,150 audio h per GPU-hour "
            "before any elementwise work, copies or feeding. bench/tokenize_layout.py measures the model alone "
            "by batch layout."
        ),
    ]
    for mode, ratio in (result.get("speedup") or {}).items():
        lines += ["", f"Speed-up of 2 GPUs over 1 ({mode}, steady audio h per hour of wall time): **{ratio:.2f}x**."]
    if not result.get("speedup"):
        lines += ["", "One GPU only on this machine: the two-GPU rows need the `nvidia-h200-x2` kind (not lent)."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="/tmp/full-ls1", help="full-size checkpoint (built here when missing)")
    p.add_argument("--tiny", action="store_true", help="tiny checkpoint (CPU smoke run)")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--files", type=int, default=7000)
    p.add_argument("--min-s", type=float, default=6.0)
    p.add_argument("--max-s", type=float, default=20.0)
    p.add_argument("--gpus", default="1,2", help="encode actors (one GPU each) per run; 0 = one CPU actor")
    p.add_argument("--modes", default="strict", help="strict (fp32, the default) and/or tf32")
    p.add_argument("--object-store-mb", type=int, default=8192)
    p.add_argument("--no-official", action="store_true", help="skip the official loop")
    p.add_argument("--work", type=Path, default=Path("/tmp/tokenize-steady"))
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    checkpoint = Path(args.checkpoint)
    ensure_scaled_checkpoint(checkpoint, args.tiny)
    manifest = args.work / "data" / "train.jsonl"
    start = time.perf_counter()
    if not manifest.exists():
        make_files(args.work / "data", args.files, 0, args.device, args.min_s, args.max_s)
    audio_s = sum(sf.info(json.loads(line)["audio"]).duration for line in manifest.read_text().splitlines())
    log.info("%d files, %.2f h, made in %.0f s", args.files, audio_s / HOUR_S, time.perf_counter() - start)
    result: dict = {
        "files": args.files,
        "audio_s": audio_s,
        "min_s": args.min_s,
        "max_s": args.max_s,
        "date": time.strftime("%Y-%m-%d"),
        "checkpoint": "Tiny" if args.tiny else "Full-size",
        "machine": machine(),
        "pipeline": [],
    }

    def save() -> None:  # after every part: a run cut short by its time limit keeps what it measured
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "tokenize_steady.json").write_text(json.dumps(result, indent=2) + "\n")
        (args.out / "tokenize_steady.md").write_text(markdown(result))

    if not args.no_official:
        result["official"] = official_loop(str(checkpoint), manifest, args.device)
        log.info("official %s", result["official"])
        save()
    have = torch.cuda.device_count()
    for n in [int(x) for x in args.gpus.split(",")]:
        if n > max(have, 1 if n == 0 else 0):
            log.info("skipping %d GPU(s): this machine has %d", n, have)
            continue
        device = "cpu" if n == 0 else "cuda:0"
        for strict in [m == "strict" for m in args.modes.split(",")]:
            settings = Settings(model=str(checkpoint), device=device, strict_fp32_encode=strict)
            out = args.work / f"out-{n}-{'strict' if strict else 'tf32'}"
            row = pipeline_run(manifest, out, settings, max(n, 1), args.object_store_mb)
            row["agreement"] = agreement(out, str(checkpoint), device)
            result["pipeline"].append(row)
            log.info("pipeline %s", row)
            save()
    one = {p["strict_fp32"]: p for p in result["pipeline"] if p["gpus"] == 1}
    two = {p["strict_fp32"]: p for p in result["pipeline"] if p["gpus"] == 2}
    result["speedup"] = {
        ("strict fp32" if k else "TF32"): one[k]["steady_s"] / two[k]["steady_s"] for k in one if k in two
    } or None
    save()
    return result


if __name__ == "__main__":
    main()
