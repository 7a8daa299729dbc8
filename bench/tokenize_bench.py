"""Dataset tokenization throughput: ours (``python -m core tokenize`` on Ray Data, strict fp32 and TF32,
1 GPU and more where the machine has them) against the official ``finetuning/prepare_data.py`` loop
(``Qwen3TTSTokenizer.encode`` on batches of 32 paths, one device), on the same files; plus the batched
encode alone (32 clips at a time, as each side's model sees them): wall time and peak GPU memory. Writes
``tokenize_bench.json`` and ``tokenize_bench.md`` to --out.

On the GPU machine (builds the full-size random checkpoint when it is missing; Ray must be importable),
the parts in separate processes, so the official path runs as it runs (the engine caps cuDNN's
workspace for its process: Settings.conv_workspace_mib):

    for part in official ours pipeline; do python -m bench.tokenize_bench --parts $part --out bench/results; done

CPU smoke run: ``python -m bench.tokenize_bench --tiny --device cpu --files 12 --gpus 0 --out /tmp/tb``.
The official loop runs with PyTorch's default TF32 flags, as prepare_data does; ours runs with its own
(strict fp32 encodes: see Settings.strict_fp32_encode) and, for a like-for-like row, with TF32 allowed too.
Random weights: nothing here is about quality.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gpu_usage import GpuSampler  # noqa: E402
from bench.harness import ensure_scaled_checkpoint, signal, timed  # noqa: E402
from core.dataset.inputs import read_inputs  # noqa: E402
from core.dataset.pipeline import TokenizeOptions, job_record, run  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.units import MIB  # noqa: E402

SR = 24_000  # Hz, the codec's rate
FILE_SR = 16_000  # Hz, the bench files' rate: both paths resample, as with most speech datasets
OFFICIAL_BATCH = 32  # BATCH_INFER_NUM of finetuning/prepare_data.py
HOUR_S = 3600.0  # seconds in an hour

log = logging.getLogger("bench")


def make_files(folder: Path, count: int, seed: int, device: str, min_s: float, max_s: float) -> Path:
    """``count`` 16 kHz speech-like WAVs of random lengths and a fine-tuning JSONL naming them."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    lengths = rng.uniform(min_s, max_s, count)
    lines = []
    for i, seconds in enumerate(lengths):
        path = folder / f"utt{i:05d}.wav"
        x = signal(float(seconds), seed + i, device)
        sf.write(path, _to_16k(x), FILE_SR, subtype="PCM_16")
        lines.append(json.dumps({"audio": str(path), "text": f"utterance {i}", "language": "English"}))
    manifest = folder / "train.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def _to_16k(x: np.ndarray) -> np.ndarray:
    import soxr

    return soxr.resample(x, SR, FILE_SR)


def official_loop(checkpoint: str, manifest: Path, device: str) -> dict:
    """finetuning/prepare_data.py's loop as it runs (paths in, codes as lists out), timed whole."""
    from qwen_tts import Qwen3TTSTokenizer

    tok = Qwen3TTSTokenizer.from_pretrained(checkpoint, device_map=device)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    tok.encode([r["audio"] for r in rows[:OFFICIAL_BATCH]])  # warm-up: cuDNN picks its kernels
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    frames = 0
    for i in range(0, len(rows), OFFICIAL_BATCH):
        enc = tok.encode([r["audio"] for r in rows[i : i + OFFICIAL_BATCH]])
        for code, row in zip(enc.audio_codes, rows[i : i + OFFICIAL_BATCH], strict=True):
            row["audio_codes"] = code.cpu().tolist()
            frames += len(row["audio_codes"])
    wall = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / MIB if device.startswith("cuda") else None
    return {"wall_s": wall, "peak_mib": peak, "frames": frames, "files": len(rows), "tok": tok}


def time_batches(fn, clips: list[np.ndarray], device: str) -> tuple[float, float | None]:
    """(wall s, peak MiB) of ``fn`` over ``clips``, 32 at a time, after a warm-up on the first batch."""
    fn(clips[:OFFICIAL_BATCH])  # warm-up for this path's shapes
    total, peak = 0.0, 0.0
    for i in range(0, len(clips), OFFICIAL_BATCH):
        batch = clips[i : i + OFFICIAL_BATCH]
        _, seconds, p = timed(lambda batch=batch: fn(batch), device)
        total += seconds
        peak = max(peak, p or 0.0)
    return total, (peak if device.startswith("cuda") else None)


def ours_batches(checkpoint: str, variants, clips: list[np.ndarray], device: str) -> list[dict]:
    """The model work alone, 32 clips at a time, through the engine (settings variants)."""
    from types import SimpleNamespace

    rows = []
    for label, changes in variants:
        engine = Engine(Settings(model=checkpoint, device=device, **changes))
        assert engine.load(), engine.error
        seconds, peak = time_batches(
            lambda b, e=engine: e.encode_batch([SimpleNamespace(samples=c) for c in b]), clips, device
        )
        rows.append({"path": label, "settings": changes, "wall_s": seconds, "peak_mib": peak})
        if not changes:  # the batched encode itself, without the engine's grouping: one pass per 32 clips
            rows.append(direct_batches(engine, lambda fn: time_batches(fn, clips, device), None))
        del engine
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows


def direct_batches(engine, loop, budget_s: float | None) -> dict:
    """core.nn.batching.encode_batch on whole 32-clip batches (strict fp32, as the engine's encodes):
    one pass, or front-end time windows sized so 32 x (window + context) ~ ``budget_s`` of audio."""
    from bench.harness import full_fp32
    from core.nn import batching
    from core.nn.encoding import conv_context_samples

    context = conv_context_samples(engine.model)
    window = None if budget_s is None else max(1920, int(budget_s * SR) // OFFICIAL_BATCH - context)

    def run(batch):
        with torch.inference_mode(), full_fp32():
            return batching.encode_batch(engine.model, [torch.from_numpy(c) for c in batch], window)

    seconds, peak = loop(run)
    label = (
        "one pass" if window is None else f"front-end windows of {window / SR:.2f} s (+{context / SR:.2f} s context)"
    )
    return {
        "path": f"ours: core.nn.batching.encode_batch, 32 clips, {label}",
        "window_samples": window,
        "wall_s": seconds,
        "peak_mib": peak,
    }


def pipeline_run(manifest: Path, out: Path, settings: Settings, actors: int, object_store_mib: int) -> dict:
    """One tokenize job (a fresh local Ray each time), timed end to end and from its first result."""
    inputs = read_inputs(manifest)
    options = TokenizeOptions(actors=actors, object_store_mib=object_store_mib)
    marks: list[float] = []
    sampler = GpuSampler() if settings.is_cuda else None
    start = time.perf_counter()
    result = run(
        inputs,
        out,
        settings,
        options,
        job_record(inputs, settings, options, str(manifest)),
        {},
        on_result=lambda r: marks.append(time.perf_counter()),
    )
    wall = time.perf_counter() - start
    steady = marks[-1] - marks[0] if len(marks) > 1 else wall
    utilisation = sampler.stop(marks[0], marks[-1]) if sampler and marks else None
    return {
        "strict_fp32": settings.strict_fp32_encode,
        "gpu_utilisation": utilisation,
        "actors": result.actors,
        "gpus": max(result.actors, 1) if settings.is_cuda else 0,
        "files": result.files,
        "audio_s": result.audio_s,
        "wall_s": wall,
        "first_result_s": marks[0] - start if marks else None,
        "steady_s": steady,
    }


def per_gpu_hour(audio_s: float, wall_s: float, gpus: int) -> float:
    return (audio_s / HOUR_S) / (wall_s / HOUR_S) / max(gpus, 1)


def markdown(result: dict) -> str:
    m = result["machine"]
    batch_audio_s = result.get("batch_audio_s", result["audio_s"])
    o = result["official"]
    lines = [
        "# Dataset tokenization: ours on Ray Data vs the official prepare_data loop",
        "",
        (
            f"16 kHz speech-like files of {result['min_s']:g}-{result['max_s']:g} s; {m['gpu']}; torch {m['torch']}, "
            f"ray {result['ray']}. Full-size checkpoint, random weights, transformer layer scales 1.0: throughput, "
            f"memory and agreement only. {result.get('runs', '')}"
        ),
        "",
        "## Whole jobs (files in, codes out)",
        "",
        "| path | files | audio h | GPUs | wall s | audio h per GPU-hour (whole run) | audio h per GPU-hour (steady) | GPU utilisation (steady) |",
        "|---|---|---|---|---|---|---|---|",
        (
            f"| official prepare_data loop (batch {OFFICIAL_BATCH}; model already loaded and warm; TF32 convs, "
            f"PyTorch's default) | {o['files']} | {batch_audio_s / HOUR_S:.2f} | 1 | {o['wall_s']:.1f} | "
            f"{per_gpu_hour(batch_audio_s, o['wall_s'], 1):.0f} | - | - |"
        ),
    ]
    for p in result["pipeline"]:
        flag = "" if p.get("strict_fp32", True) else " --no-strict-fp32-encode"
        use = p.get("gpu_utilisation")
        use_text = ", ".join(f"{u:.0f}%" for u in use) if use else "-"
        lines.append(
            f"| ours: `python -m core tokenize{flag}` ({'strict fp32' if not flag else 'TF32'}), {p['actors']} actor(s); "
            f"whole run includes Ray start and model load ({p['first_result_s']:.0f} s to the first result) | "
            f"{p['files']} | {p['audio_s'] / HOUR_S:.2f} | {p['gpus']} | {p['wall_s']:.1f} | "
            f"{per_gpu_hour(p['audio_s'], p['wall_s'], p['gpus']):.0f} | "
            f"{per_gpu_hour(p['audio_s'], p['steady_s'], p['gpus']):.0f} ({p['steady_s']:.0f} s) | {use_text} |"
        )
    if result.get("scaling"):
        for strict, ratio in result["scaling"].items():
            lines += [
                "",
                f"Second GPU ({'strict' if strict == 'True' else 'TF32'}): {ratio:.2f}x the one-GPU steady throughput.",
            ]
    lines += [
        "",
        f"## Batched encode alone ({OFFICIAL_BATCH} clips per call, {o['files']} clips, 24 kHz arrays in)",
        "",
        "| path | wall s | audio h per GPU-hour | peak GPU memory MiB | vs official memory |",
        "|---|---|---|---|---|",
    ]
    rows = result["official_batches"] + result["ours_batches"]
    base = rows[0]["peak_mib"]
    for b in rows:
        share = f"{b['peak_mib'] / base:.2f}x" if b["peak_mib"] and base else "-"
        peak = f"{b['peak_mib']:.0f}" if b["peak_mib"] else "-"
        rate = per_gpu_hour(batch_audio_s, b["wall_s"], 1)
        lines.append(f"| {b['path']} | {b['wall_s']:.2f} | {rate:.0f} | {peak} | {share} |")
    agree = result["batch_vs_lone"]
    lines += [
        "",
        (
            f"Official whole-loop peak GPU memory: {o['peak_mib'] or 0:.0f} MiB. Our batched codes (engine defaults: "
            f"strict fp32) equal lone encodes (`python -m core encode`) on {100 * agree['codes_equal_share']:.4f}% "
            f"of codes ({agree['clips']} clips)."
        ),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="/tmp/full-ls1", help="full-size checkpoint (built here when missing)")
    p.add_argument("--tiny", action="store_true", help="tiny checkpoint (CPU smoke run)")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--files", type=int, default=1024)
    p.add_argument("--min-s", type=float, default=3.0)
    p.add_argument("--max-s", type=float, default=17.0)
    p.add_argument("--gpus", default="1,2", help="pipeline runs: encode actors (one GPU each); 0 = CPU actor")
    p.add_argument("--object-store-mb", type=int, default=8192)
    p.add_argument("--modes", default="strict,tf32", help="pipeline runs: strict (fp32, the default), tf32")
    p.add_argument("--work", type=Path, default=Path("/tmp/tokenize-bench"))
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--parts", default="official,ours,pipeline", help="official, ours (batched encodes), pipeline (Ray jobs)"
    )
    return p.parse_args(argv)


def official_part(args, checkpoint: Path, manifest: Path) -> dict:
    """The official loop and the official batched encode (in a process of their own: PyTorch's defaults)."""
    official = official_loop(str(checkpoint), manifest, args.device)
    tok = official.pop("tok")
    clips = _clips(manifest)
    seconds, peak = time_batches(lambda b: tok.encode(b, sr=SR), clips, args.device)
    row = {
        "path": "official Qwen3TTSTokenizer.encode (PyTorch defaults: TF32 convs)",
        "wall_s": seconds,
        "peak_mib": peak,
    }
    return {
        "official": official,
        "official_batches": [row],
        "batch_files": len(clips),
        "batch_audio_s": _audio_s(clips),
    }


def _clips(manifest: Path) -> list[np.ndarray]:
    from core.audio.files import load_audio

    return [load_audio(json.loads(line)["audio"]).samples for line in manifest.read_text().splitlines()]


def _audio_s(clips) -> float:
    return sum(c.size for c in clips) / SR


def ours_part(args, checkpoint: Path, manifest: Path) -> dict:
    """Our batched encodes (strict fp32 and TF32) and the agreement of batched codes with lone encodes."""
    from types import SimpleNamespace

    clips = _clips(manifest)
    variants = [
        ("ours: Engine.encode_batch (defaults: strict fp32, windows, cuDNN workspace cap)", {}),
        ("ours: Engine.encode_batch, TF32 allowed (same flags as official)", {"strict_fp32_encode": False}),
    ]
    batches = ours_batches(str(checkpoint), variants, clips, args.device)
    engine = Engine(Settings(model=str(checkpoint), device=args.device))
    assert engine.load(), engine.error
    sample = clips[: 2 * OFFICIAL_BATCH]
    batched = [r.codes for r in engine.encode_batch([SimpleNamespace(samples=c) for c in sample])]
    lone = [engine.encode_array(c).codes for c in sample]
    equal = sum(int((a == b).sum()) for a, b in zip(batched, lone, strict=True))
    agreement = {"clips": len(sample), "codes_equal_share": equal / sum(a.size for a in lone)}
    del engine
    return {"ours_batches": batches, "batch_vs_lone": agreement}


def pipeline_part(args, checkpoint: Path, manifest: Path) -> dict:
    """``tokenize`` jobs: strict fp32 (the default) and TF32, on 1 GPU and more where the machine has them."""
    pipeline = []
    for n in [int(x) for x in args.gpus.split(",")]:
        if n > max(torch.cuda.device_count(), 1 if n == 0 else 0):
            log.info("skipping %d GPU(s): this machine has %d", n, torch.cuda.device_count())
            continue
        device = "cpu" if n == 0 else "cuda:0"
        for strict in [m == "strict" for m in args.modes.split(",")]:
            settings = Settings(model=str(checkpoint), device=device, strict_fp32_encode=strict)
            name = f"out-{n}-{'strict' if strict else 'tf32'}"
            pipeline.append(pipeline_run(manifest, args.work / name, settings, max(n, 1), args.object_store_mb))
            log.info("pipeline %s", pipeline[-1])
    one = {p["strict_fp32"]: p for p in pipeline if p["gpus"] == 1}
    two = {p["strict_fp32"]: p for p in pipeline if p["gpus"] == 2}
    scaling = {str(k): one[k]["steady_s"] / two[k]["steady_s"] for k in one if k in two} or None
    import ray

    return {"pipeline": pipeline, "scaling": scaling, "ray": ray.__version__}


def main(argv=None) -> dict:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    checkpoint = Path(args.checkpoint)
    ensure_scaled_checkpoint(checkpoint, args.tiny)
    manifest = args.work / "data" / "train.jsonl"
    if not manifest.exists():
        make_files(args.work / "data", args.files, 0, args.device, args.min_s, args.max_s)
    audio_s = sum(sf.info(json.loads(line)["audio"]).duration for line in manifest.read_text().splitlines())
    log.info("%d files, %.3f h", args.files, audio_s / HOUR_S)
    saved = args.work / "tokenize_bench.json"  # parts run in separate calls add to one result
    result = json.loads(saved.read_text()) if saved.exists() else {}
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor() or "CPU"
    result.update(
        files=args.files,
        audio_s=audio_s,
        min_s=args.min_s,
        max_s=args.max_s,
        machine={
            "gpu": f"{torch.cuda.device_count()} x {gpu}" if torch.cuda.is_available() else gpu,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
    )
    if "official" in args.parts:
        result.update(official_part(args, checkpoint, manifest))
    if "ours" in args.parts:
        result.update(ours_part(args, checkpoint, manifest))
    if "pipeline" in args.parts:
        result.update(pipeline_part(args, checkpoint, manifest))
    saved.write_text(json.dumps(result, indent=2) + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tokenize_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    if "official" in result and "ours_batches" in result and "pipeline" in result:
        (args.out / "tokenize_bench.md").write_text(markdown(result))
        print(markdown(result))
    return result


if __name__ == "__main__":
    main()
