"""Decoder fine-tuning: peak GPU memory and audio seconds trained per second, the naive official-class
step beside ours (``python -m core finetune``'s own loop, run through ``core.training.finetune``).

Rows, at each batch shape (default 4 × 30 s and 16 × 10 s):

- ``official``: the obvious code with the official classes: codes → ``model.decoder`` (codebooks on the
  device, frozen) → multi-resolution log-mel L1 → backward → AdamW over the decoder's other parameters;
  fp32, and under bf16 autocast;
- ``ours``: fp32; bf16 autocast; bf16 + per-block activation checkpointing; the same with the frozen
  codebooks off the GPU; bf16 with the convolutions in 2 s windows with left context; and that with the
  discriminators (adversarial + feature matching after no warm-up); and every memory tactic at once
  (bf16, checkpointing, 1 s windows, one segment at a time through gradient accumulation).

Each of ours is a real run (data read and encoded, held-out evaluation, export) whose step lines give
the figures: peak = ``torch.cuda.max_memory_allocated`` over the training steps (weights and optimizer
included), speed = the median over the steps after the first. ``--gpus 1,2`` instead runs the same
settings on 1 and on 2 GPUs with DDP (NCCL), and on 1 GPU with the doubled batch in two micro-batches,
whose weights the 2-GPU run's are compared with.

GPU (builds the full-size random checkpoint when it is missing)::

    python -m bench.finetune_bench --checkpoint /tmp/full --out bench/results
    python -m bench.finetune_bench --checkpoint /tmp/full --gpus 1,2 --out bench/results

CPU smoke run: ``python -m bench.finetune_bench --tiny --device cpu --shapes 2x0.64 --steps 2 --out /tmp/fb``.
Random weights: nothing here is about quality.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import soundfile as sf
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import ensure_checkpoint, is_oom, machine, provenance, signal, table, write_results  # noqa: E402
from core.codec import FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE  # noqa: E402
from core.training import FinetuneSettings, finetune  # noqa: E402
from core.units import MIB  # noqa: E402

log = logging.getLogger("bench")
CLIPS = 6  # synthetic speech-like clips (one held out)
OURS = (  # (label, settings changes)
    ("ours fp32", dict(precision="fp32", checkpointing="none", frozen_off_device=False)),
    ("ours bf16", dict(precision="bf16", checkpointing="none", frozen_off_device=False)),
    ("ours bf16 + checkpointing", dict(precision="bf16", checkpointing="blocks", frozen_off_device=False)),
    ("ours bf16 + checkpointing + frozen off GPU", dict(precision="bf16", checkpointing="blocks")),
    ("ours bf16 + 2 s windows + frozen off GPU", dict(precision="bf16", checkpointing="none", window_s=2.0)),
    (
        "ours bf16 + 2 s windows + discriminators",
        dict(precision="bf16", checkpointing="none", window_s=2.0, adversarial=True),
    ),
    (
        "ours bf16 + checkpointing + 1 s windows + one segment at a time",
        dict(precision="bf16", checkpointing="blocks", window_s=1.0, accumulate="batch"),
    ),
)


def make_data(folder: Path, seconds: float, device: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(CLIPS):
        sf.write(folder / f"clip{i}.wav", signal(seconds, i, device), SAMPLE_RATE, subtype="PCM_16")
    return folder


def official_row(checkpoint: Path, device: str, batch: int, seconds: float, steps: int, autocast: bool) -> dict:
    """The naive step with the official classes (see the module docstring)."""
    from qwen_tts import Qwen3TTSTokenizer

    from core.training.losses import MultiResolutionMel

    model = Qwen3TTSTokenizer.from_pretrained(str(checkpoint), device_map=device, dtype=torch.float32).model
    decoder = model.decoder.train()
    for p in decoder.quantizer.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in decoder.parameters() if p.requires_grad], 1e-4)
    mel = MultiResolutionMel().to(device)
    frames = round(seconds * FRAME_RATE)
    g = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 2048, (batch, NUM_CODEBOOKS, frames), generator=g).to(device)
    target = (torch.randn(batch, 1, frames * 1920, generator=g) * 0.1).to(device)
    times = []
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(device)
    try:
        for _ in range(steps):
            start = time.perf_counter()
            with torch.autocast("cuda" if device.startswith("cuda") else "cpu", torch.bfloat16, enabled=autocast):
                wav = decoder(codes)
            loss = mel(wav.float(), target).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if device.startswith("cuda"):
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - start)
    except Exception as e:  # a row that fails is a row that says why; the others still run
        return {"error": "out of memory" if is_oom(e) else f"{type(e).__name__}: {e}"[:200]}
    finally:
        del model, decoder, optimizer
    return _figures(times, batch * seconds, device)


def _figures(times: list[float], audio_s: float, device: str, peak_mib: float | None = None) -> dict:
    timed = times[1:] or times
    if peak_mib is None and device.startswith("cuda"):
        peak_mib = torch.cuda.max_memory_allocated(device) / MIB
    return {"audio_s_per_s": audio_s / statistics.median(timed), "peak_mib": peak_mib, "steps_timed": len(timed)}


def our_row(settings: FinetuneSettings) -> dict:
    lines: list[dict] = []
    try:
        finetune(settings, on_progress=lines.append)
    except Exception as e:  # a row that fails is a row that says why; the others still run
        log.exception("row failed")
        return {"error": "out of memory" if is_oom(e) else f"{type(e).__name__}: {e}"[:200]}
    steps = [line for line in lines if line["kind"] == "step"]
    speeds = [line["audio_s_per_s"] for line in steps[1:]] or [steps[0]["audio_s_per_s"]]
    return {
        "audio_s_per_s": statistics.median(speeds),
        "peak_mib": max(line["peak_mib"] for line in steps),
        "steps_timed": len(speeds),
        "loss_first": steps[0]["loss"],
        "loss_last": steps[-1]["loss"],
    }


def settings_for(
    data: Path, out: Path, checkpoint: Path, device: str, batch: int, seconds: float, steps: int, **changes
):
    values: dict[str, Any] = dict(
        data=data, out=out, model=str(checkpoint), steps=steps, device=device, batch_size=batch, segment_s=seconds,
        val_clips=1, adversarial=False, gan_warmup_steps=0, eval_every=0, save_every=0, max_clip_s=seconds + 2,
    )  # fmt: skip
    values.update(changes)
    return FinetuneSettings(**values)


def free(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def save_partial(args, rows: list[dict]) -> None:
    """The rows so far, after each one (a run stopped by its time limit keeps what it measured)."""
    result = {
        "machine": machine(args.device),
        "provenance": provenance("-m bench.finetune_bench"),
        "rows": rows,
        "partial": True,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "finetune_bench" + ("" if args.device.startswith("cuda") else "-cpu") + ("-tactics" if args.only else "")
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(result))


def run_rows(args, work: Path) -> list[dict]:
    rows = []
    for shape in args.shapes.split(","):
        batch, seconds = int(shape.split("x")[0]), float(shape.split("x")[1])
        data = make_data(work / f"data-{shape}", seconds + 1.0, args.device)
        for autocast in (False, True) if not args.only else ():
            label = "official fp32" if not autocast else "official bf16 autocast"
            if autocast and not args.device.startswith("cuda"):
                continue
            row = {
                "shape": shape,
                "row": label,
                **official_row(args.checkpoint, args.device, batch, seconds, args.steps, autocast),
            }
            rows.append(row)
            log.info("%s", row)
            save_partial(args, rows)
            free(args.device)
        for label, changes in OURS:
            if args.only and args.only not in label:
                continue
            if changes.get("precision") == "bf16" and not args.device.startswith("cuda"):
                changes, label = {**changes, "precision": "fp32"}, label.replace("bf16", "fp32 (CPU)")
            if changes.get("accumulate") == "batch":  # micro-batches of one segment
                changes = {**changes, "accumulate": batch}
            out = work / f"run-{shape}-{len(rows)}"
            settings = settings_for(data, out, args.checkpoint, args.device, batch, seconds, args.steps, **changes)
            row = {"shape": shape, "row": label, **our_row(settings)}
            rows.append(row)
            log.info("%s", row)
            save_partial(args, rows)
            free(args.device)
    return rows


def run_gpus(args, work: Path) -> list[dict]:
    from core.training.train import finetune_on

    batch, seconds = int(args.shapes.split(",")[0].split("x")[0]), float(args.shapes.split(",")[0].split("x")[1])
    data = make_data(work / "data", seconds + 1.0, "cpu")
    base = settings_for(
        data,
        work / "x",
        args.checkpoint,
        args.device,
        batch,
        seconds,
        args.steps,
        precision=args.precision,
        checkpointing="blocks",
    )
    rows: list[dict] = []
    for label, processes, changes in (
        ("1 process", 1, {}),
        ("2 processes (DDP)", 2, {}),
        ("1 process, doubled batch in 2 micro-batches", 1, {"batch_size": 2 * batch, "accumulate": 2}),
    ):
        out = work / f"gpus-{len(rows)}"
        settings = replace(base, out=out, **changes)
        finetune_on(processes, settings)
        lines = [json.loads(x) for x in (out / "progress.jsonl").read_text().splitlines()]
        steps = [x for x in lines if x["kind"] == "step"]
        speeds = [x["audio_s_per_s"] for x in steps[1:]] or [steps[0]["audio_s_per_s"]]
        rows.append(
            {
                "row": label,
                "processes": processes,
                "audio_s_per_s": statistics.median(speeds),
                "peak_mib": max(x["peak_mib"] for x in steps),
                "out": str(out),
            }
        )
        free(args.device)
    weights = [
        torch.load(Path(r["out"]) / "state" / "latest.pt", map_location="cpu", weights_only=False)["decoder"]
        for r in rows
    ]
    rows[1]["max_weight_difference_vs_doubled_batch"] = max(
        (weights[1][k] - weights[2][k]).abs().max().item() for k in weights[1]
    )
    rows[1]["speedup"] = rows[1]["audio_s_per_s"] / rows[0]["audio_s_per_s"]
    return rows


def run_curves(args, work: Path) -> dict:
    """The same ``--curves`` steps in fp32 and in bf16 (mel only, same data and segments): each step's
    total loss, and how far apart the two curves are (10-step moving averages, and the last 20 steps)."""
    batch, seconds = int(args.shapes.split(",")[0].split("x")[0]), float(args.shapes.split(",")[0].split("x")[1])
    data = make_data(work / "data", seconds + 1.0, args.device)
    curves = {}
    for precision in ("fp32", "bf16"):
        lines: list[dict] = []
        settings = settings_for(
            data,
            work / f"curve-{precision}",
            args.checkpoint,
            args.device,
            batch,
            seconds,
            args.curves,
            precision=precision,
        )
        finetune(settings, on_progress=lines.append)
        curves[precision] = [x["loss"]["total"] for x in lines if x["kind"] == "step"]
        free(args.device)
    a, b = curves["fp32"], curves["bf16"]
    smooth = lambda v, i: statistics.fmean(v[max(0, i - 9) : i + 1])  # noqa: E731
    relative = [abs(smooth(b, i) - smooth(a, i)) / abs(smooth(a, i)) for i in range(len(a))]
    tail = abs(statistics.fmean(b[-20:]) - statistics.fmean(a[-20:])) / abs(statistics.fmean(a[-20:]))
    return {
        "shape": args.shapes.split(",")[0],
        "steps": args.curves,
        "curves": curves,
        "max_relative_gap_smoothed": max(relative),
        "relative_gap_last_20": tail,
    }


def markdown(result: dict) -> str:
    lines = [
        f"# Decoder fine-tuning: peak memory and speed ({result['machine'].get('gpu', result['machine'].get('cpu'))})",
        "",
        "Random weights: these figures are about memory and speed only, never about quality.",
        f"Command: `{result['provenance']['command']}`",
        "",
    ]
    if result.get("curves"):
        c = result["curves"]
        lines += [
            f"fp32 and bf16 autocast, {c['steps']} steps of {c['shape']} (batch × seconds), mel + loudness losses, same segments:",
            "",
            f"- total loss, first step: fp32 {c['curves']['fp32'][0]:.4f}, bf16 {c['curves']['bf16'][0]:.4f}",
            f"- total loss, mean of the last 20 steps: fp32 {statistics.fmean(c['curves']['fp32'][-20:]):.4f}, bf16 {statistics.fmean(c['curves']['bf16'][-20:]):.4f} (gap {100 * c['relative_gap_last_20']:.2f} %)",
            f"- largest gap of the 10-step moving averages over the run: {100 * c['max_relative_gap_smoothed']:.2f} %",
        ]
        return "\n".join(lines) + "\n"
    if result.get("gpus"):
        rows = [
            [
                r["row"],
                f"{r['audio_s_per_s']:.1f}",
                f"{r['peak_mib'] / 1024:.2f}",
                f"{r.get('speedup', float('nan')):.2f}",
                f"{r.get('max_weight_difference_vs_doubled_batch', float('nan')):.2e}",
            ]
            for r in result["gpus"]
        ]
        lines += table(
            ["run", "audio s/s", "peak GiB (rank 0)", "speed-up", "max |Δw| vs doubled batch"], rows, right=4
        )
        return "\n".join(lines) + "\n"
    rows = []
    for r in result["rows"]:
        if "error" in r:
            rows.append([r["shape"], r["row"], r["error"], ""])
        else:
            rows.append(
                [
                    r["shape"],
                    r["row"],
                    f"{r['peak_mib'] / 1024:.2f}" if r["peak_mib"] is not None else "n/a",
                    f"{r['audio_s_per_s']:.1f}",
                ]
            )
    lines += table(["batch × seconds", "step", "peak GiB", "audio s/s"], rows, right=2)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--checkpoint", type=Path, default=Path("/tmp/full"), help="full-size checkpoint (built when missing)"
    )
    parser.add_argument("--tiny", action="store_true", help="build and use a tiny checkpoint (CPU smoke run)")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--shapes", default="4x30,16x10", help="batch x seconds, comma separated")
    parser.add_argument("--steps", type=int, default=3, help="steps per row (the first is not timed)")
    parser.add_argument("--gpus", default="", help="'1,2': 1 vs 2 GPUs with DDP instead of the rows")
    parser.add_argument("--precision", default="bf16", help="precision of the --gpus runs")
    parser.add_argument("--only", default="", help="run only our rows whose label contains this (no official rows)")
    parser.add_argument(
        "--curves", type=int, default=0, help="N: fp32 and bf16 loss curves over N steps instead of the rows"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    with tempfile.TemporaryDirectory(prefix="finetune-bench-") as tmp:
        work = Path(tmp)
        if args.tiny:
            from core.model.checkpoints import build_tiny_checkpoint

            args.checkpoint = build_tiny_checkpoint(work / "tiny")
        else:
            ensure_checkpoint(args.checkpoint)
        result = {
            "machine": machine(args.device),
            "provenance": provenance("-m bench.finetune_bench"),
            "random_weights": True,
        }
        if args.curves:
            result["curves"] = run_curves(args, work)
            stem = "finetune_curves"
        elif args.gpus:
            result["gpus"] = run_gpus(args, work)
            stem = "finetune_gpus"
        else:
            result["rows"] = run_rows(args, work)
            stem = (
                "finetune_bench"
                + ("" if args.device.startswith("cuda") else "-cpu")
                + ("-tactics" if args.only else "")
            )
    write_results(args.out, stem, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
