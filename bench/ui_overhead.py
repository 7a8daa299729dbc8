"""The web UI's own work per request, for a 30 s clip: everything except the model calls
(reading the upload, resampling, downmixing, metrics, plots, writing the WAVs and the
token file, formatting). Budget: 0.5 s on the 2-core development machine.

    python -m bench.ui_overhead                      # tiny random checkpoint, CPU
    python -m bench.ui_overhead --model DIR --device cuda:0

It calls the real Gradio handlers (``webui.tabs.*``) as the server does, minus
the HTTP transport, and subtracts the model time the engine measured around its own work:
``overhead = handler wall time - (encode seconds + decode seconds)``. The metrics (PESQ,
STOI, ...) are the round trip's follow-up event ``/metrics`` and are reported beside it. The clip is real
synthetic speech (the espeak-ng example clip, looped to 30 s), given twice: as 44.1 kHz
16-bit stereo (resampled and downmixed, the common case for a user's file) and as 24 kHz
mono (no conversion). Each case runs once to warm up, then ``--repeats`` times; the
median is the figure. Writes ``bench/results/ui_overhead.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import created, host, summarize  # noqa: E402
from core import tokens  # noqa: E402
from core.analysis import metrics  # noqa: E402
from core.audio.files import load_audio, resample, write_wav  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.settings import Settings  # noqa: E402
from webui.serving.workspace import Workspace  # noqa: E402
from webui.tabs.decode import DecodeHandlers  # noqa: E402
from webui.tabs.encode import EncodeHandlers  # noqa: E402
from webui.tabs.roundtrip import RoundTripHandlers  # noqa: E402

logger = logging.getLogger("bench.ui_overhead")

BUDGET_S = 0.5  # seconds of UI work allowed per 30 s round trip
CLIP_S = 30.0  # seconds of audio
SOURCE = ROOT / "webui" / "assets" / "speech_male_24k.wav"  # real (synthetic) speech, 24 kHz mono
CASES = {"44.1 kHz stereo 16-bit WAV": (44_100, 2), "24 kHz mono 16-bit WAV": (24_000, 1)}


def make_clip(folder: Path, rate: int, channels: int) -> Path:
    speech, source_rate = sf.read(SOURCE, dtype="float32")
    looped = np.tile(speech, int(np.ceil(CLIP_S * source_rate / speech.size)))[: int(CLIP_S * source_rate)]
    x = resample(looped, source_rate, rate)
    if channels == 2:  # a slightly different right channel, as in a real stereo file
        x = np.stack([x, 0.8 * np.roll(x, 12)], axis=1)
    path = folder / f"clip_{rate}_{channels}ch.wav"
    sf.write(path, x, rate, subtype="PCM_16")
    return path


def time_roundtrip(handlers: RoundTripHandlers, clip: Path) -> dict:
    """The Round trip button: the /roundtrip event, then its /metrics follow-up."""
    start = time.perf_counter()
    outputs = handlers.roundtrip(str(clip))
    wall = time.perf_counter() - start
    model = outputs.details["timing"]["model_s"]
    start = time.perf_counter()
    handlers.metrics(outputs.original, outputs.reconstruction)
    metrics_s = time.perf_counter() - start
    return {
        "wall_s": wall,
        "model_s": model,
        "overhead_s": wall - model,
        "metrics_s": metrics_s,
        "total_s": wall - model + metrics_s,
    }


def time_encode(handlers: EncodeHandlers, clip: Path) -> dict:
    start = time.perf_counter()
    outputs = handlers.encode(str(clip))
    wall = time.perf_counter() - start
    model = outputs[-1]["timing"]["model_s"]
    return {"wall_s": wall, "model_s": model, "overhead_s": wall - model, "token_file": outputs[0]}


def time_decode(handlers: DecodeHandlers, token_file: str) -> dict:
    start = time.perf_counter()
    outputs = handlers.decode(token_file)
    wall = time.perf_counter() - start
    model = outputs[-1]["timing"]["model_s"]
    return {"wall_s": wall, "model_s": model, "overhead_s": wall - model}


def stages(engine: Engine, clip: Path, folder: Path) -> dict:
    """The round trip's UI stages one by one."""
    out = {}
    t = time.perf_counter()
    audio = load_audio(clip)
    out["read + resample + downmix"] = time.perf_counter() - t
    codes = engine.encode(audio).codes
    rec = engine.decode(codes, original_samples=audio.samples.size).samples
    t = time.perf_counter()
    write_wav(folder / "a.wav", audio.samples)
    write_wav(folder / "b.wav", rec)
    tokens.save_tokens(tokens.make_token_file(codes, audio.samples.size, "bench"), folder / "t.npz")
    out["write 2 WAVs + token file"] = time.perf_counter() - t
    t = time.perf_counter()
    metrics.compare(audio.samples, rec)
    out["metrics (PESQ-WB/NB, STOI on 8 s; SI-SDR, log-mel on all)"] = time.perf_counter() - t
    t = time.perf_counter()
    metrics.figure_to_png(metrics.spectrogram_figure(audio.samples, rec), folder / "s.png")
    out["spectrogram figure + PNG"] = time.perf_counter() - t
    for f in ("a.wav", "b.wav", "t.npz", "s.png"):
        (folder / f).unlink(missing_ok=True)
    return out


def run(model: str | None, device: str, repeats: int, work: Path) -> dict:
    if model is None:
        from core.model.checkpoints import build_tiny_checkpoint

        model = str(build_tiny_checkpoint(work / "tiny"))
    engine = Engine(Settings(model=model, device=device))
    report = engine.warm_up()
    if not report.ok:
        raise SystemExit(f"engine not ready: {engine.error or report.to_dict()}")
    workspace = Workspace(work / "requests")
    trip, enc, dec = (
        RoundTripHandlers(engine, workspace),
        EncodeHandlers(engine, workspace),
        DecodeHandlers(engine, workspace),
    )
    load_before = os.getloadavg()
    results: dict[str, Any] = {"cases": {}}
    for name, (rate, channels) in CASES.items():
        clip = make_clip(work, rate, channels)
        time_roundtrip(trip, clip)  # warm-up: imports, font cache, PESQ tables
        runs = [time_roundtrip(trip, clip) for _ in range(repeats)]
        encodes = [time_encode(enc, clip) for _ in range(repeats)]
        decodes = [time_decode(dec, encodes[0]["token_file"]) for _ in range(repeats)]
        stage_runs = [stages(engine, clip, work) for _ in range(repeats)]
        results["cases"][name] = {
            "roundtrip_overhead": summarize([r["overhead_s"] for r in runs]),
            "metrics_event": summarize([r["metrics_s"] for r in runs]),
            "both_events": summarize([r["total_s"] for r in runs]),
            "roundtrip_model": summarize([r["model_s"] for r in runs]),
            "encode_overhead": summarize([r["overhead_s"] for r in encodes]),
            "decode_overhead": summarize([r["overhead_s"] for r in decodes]),
            "stages_median_s": {k: statistics.median(s[k] for s in stage_runs) for k in stage_runs[0]},
        }
        logger.info(
            "%s: round-trip UI work median %.3f s", name, results["cases"][name]["roundtrip_overhead"]["median_s"]
        )
    headline = max(c["roundtrip_overhead"]["median_s"] for c in results["cases"].values())
    results.update(
        {
            "clip_s": CLIP_S,
            "budget_s": BUDGET_S,
            "headline_median_s": headline,
            "within_budget": headline <= BUDGET_S,
            "model": model,
            "device": device,
            "repeats": repeats,
            "machine": host(load_before),
            "created": created(),
        }
    )
    return results


def markdown(r: dict) -> str:
    lines = [
        "# Web UI overhead (everything but the model calls)",
        "",
        f"{r['clip_s']:.0f} s clip, {r['repeats']} runs after one warm-up, model `{r['model']}` on {r['device']}, "
        f"{r['machine']['cpus']} CPUs, load average {r['machine']['loadavg_before'][0]:.2f} before / "
        f"{r['machine']['loadavg_after'][0]:.2f} after. Budget {r['budget_s']} s per round trip.",
        "",
        f"**`/roundtrip` UI work (everything but the model: reading, resampling, spectrogram figure, "
        f"files, formatting), worst-case median: {r['headline_median_s']:.3f} s** "
        f"({'within' if r['within_budget'] else 'OVER'} the {r['budget_s']} s budget).",
        "",
        "The Round trip button runs `/roundtrip` (the players, spectrograms, facts, tokens and downloads "
        "appear when it ends), then the follow-up `/metrics` (PESQ-WB, PESQ-NB, STOI on the first 8 s; "
        "SI-SDR and log-mel distance on all of it).",
        "",
        "| input | `/roundtrip` UI work, median (min..max) | `/metrics` follow-up | both | encode tab | decode tab | model time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in r["cases"].items():
        o = c["roundtrip_overhead"]
        lines.append(
            f"| {name} | **{o['median_s']:.3f} s** ({o['min_s']:.3f}..{o['max_s']:.3f}) | "
            f"{c['metrics_event']['median_s']:.3f} s | {c['both_events']['median_s']:.3f} s | "
            f"{c['encode_overhead']['median_s']:.3f} s | {c['decode_overhead']['median_s']:.3f} s | "
            f"{c['roundtrip_model']['median_s']:.3f} s |"
        )
    lines += [
        "",
        "Stages of the round trip, measured one after another (medians, seconds):",
        "",
        "| stage | " + " | ".join(r["cases"]) + " |",
        "|---|" + "---|" * len(r["cases"]),
    ]
    stage_names = next(iter(r["cases"].values()))["stages_median_s"]
    for stage in stage_names:
        lines.append(
            f"| {stage} | " + " | ".join(f"{c['stages_median_s'][stage]:.3f}" for c in r["cases"].values()) + " |"
        )
    lines += [
        "",
        "The stages table times each step on its own (`/metrics` also re-reads the two 24 kHz WAVs "
        "it compares). Reproduce: `python -m bench.ui_overhead`.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="checkpoint directory (default: build the tiny one)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    with tempfile.TemporaryDirectory(prefix="ui-overhead-") as work:
        results = run(args.model, args.device, args.repeats, Path(work))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_overhead.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "ui_overhead.md").write_text(markdown(results))
    print(markdown(results))  # noqa: T201 - a benchmark's report goes to stdout
    return 0 if results["within_budget"] else 1


if __name__ == "__main__":
    sys.exit(main())
