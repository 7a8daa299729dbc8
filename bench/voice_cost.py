"""The new metrics' cost per clip length: speaker similarity (GE2E, and WavLM at full size with
random weights from its config) for the round trip's sources, and the verdict after the metrics.

    python bench/voice_cost.py [--lengths 10,64,600] [--models ge2e,wavlm] [--out bench/results]

For each model and length, in a fresh process (so the peak is that run's): a clip of espeak-ng
sentences one after another, the codec's stand-in (the clip plus faint noise) and the page's default
anchors (core.anchors.DEFAULT_ANCHORS). Timed in the same run, through ``core.analysis.metrics.compare``:

1. the signal metrics alone (PESQ, STOI, SI-SDR, log-mel distance: what the metrics cost without
   a speaker model, the peer of this run),
2. the speaker-similarity row for every source (the catalogue's SIM-GE2E or SIM-WavLM row, the
   chosen model loaded and warm before), with its CPU time and the peak RSS it added,
3. the verdict after the metrics (``core.judging.verdict.judge``: DistillMOS on both clips, at most
   4 windows each, combined with the metric values): the time from "metrics in" to "final".

Random weights: the WavLM model's numbers say nothing about speakers; only its time and memory
count. The machine is shared: the load average is recorded beside the figures.
Writes voice_cost.json and voice_cost.md under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import in_fresh_process, load_text, peak_rss_mib, provenance, table, write_results  # noqa: E402


def _run(seconds: float, model: str, queue) -> None:
    """In a fresh process: the three timings for one clip length and one speaker model."""
    import numpy as np

    from core.analysis import catalog
    from core.analysis.judges import Judges
    from core.analysis.metrics import compare
    from core.anchors import BY_ID, DEFAULT_ANCHORS, parse_anchors
    from core.anchors.make import make_one
    from core.judging import verdict
    from tests.core.analysis import voices

    rate = voices.RATE
    sentence = np.concatenate([voices.espeak(s) for s in voices.SENTENCES])
    clip = np.tile(sentence, int(np.ceil(seconds * rate / sentence.size)))[: int(seconds * rate)]
    sources = {a.id: make_one(clip, BY_ID[a.id]).samples for a in parse_anchors(DEFAULT_ANCHORS)}
    noise = 0.01 * np.random.default_rng(0).standard_normal(clip.size).astype(np.float32)
    sources = {"reconstruction": clip + noise, **sources}
    judges = Judges(speaker=model)
    sim = catalog.SIM_GE2E if judges.speaker_kind == "ge2e" else catalog.SIM_WAVLM
    signal = catalog.ids(m for m in catalog.COMPARED if not m.judge)
    short = clip[: 3 * rate]
    compare(short, short, metrics=[sim, *signal], judges=judges)  # warm: model load and first calls out
    started = time.perf_counter()
    signal_values = {m.name: m.value for m in compare(clip, sources["reconstruction"], metrics=signal)}
    signal_s = time.perf_counter() - started
    baseline = peak_rss_mib()
    started, cpu = time.perf_counter(), time.process_time()
    sims = {sid: compare(clip, samples, metrics=[sim], judges=judges)[0] for sid, samples in sources.items()}
    sim_s, sim_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    peak = peak_rss_mib()
    values = signal_values | {sim: sims["reconstruction"].value}
    started = time.perf_counter()
    judged = verdict.judge(clip, sources["reconstruction"], values, rate, "cpu", False, 4)
    verdict_s = time.perf_counter() - started
    queue.put(
        {
            "seconds": seconds,
            "model": sims["reconstruction"].note.split(";")[0],
            "metric": sim,
            "sources": len(sources),
            "signal_metrics_s": signal_s,
            "sim_s": sim_s,
            "sim_cpu_s": sim_cpu_s,
            "per_source_s": sim_s / len(sources),
            "verdict_after_metrics_s": verdict_s,
            "verdict": judged.level,
            "baseline_rss_mib": baseline,
            "peak_rss_mib": max(peak, peak_rss_mib()),
            "added_by_sim_mib": peak - baseline,
            "values": {sid: m.value for sid, m in sims.items()},
            "load_average": os.getloadavg(),
        }
    )


def cost(lengths: list[float], models: list[str]) -> list[dict]:
    out = []
    for model in models:
        for seconds in lengths:
            out.append(in_fresh_process(_run, seconds, model, timeout_s=3600))
            print(json.dumps(out[-1]), flush=True)
    return out


def markdown(result: dict) -> str:
    lines = [
        "# The new metrics' cost: speaker similarity per clip length, and the verdict after the metrics",
        "",
        f"`{result['command']}` on {result['cpu']} ({os.cpu_count()} cores), {result['date']}.",
        "WavLM: full size (microsoft/wavlm-base-plus-sv's sizes) with **random weights** built from its config:",
        "its numbers say nothing about speakers; only time and memory count. Sources: the codec's stand-in and",
        "the page's default anchors; each row is a fresh process, the model loaded and warm.",
        "",
        "The machine is shared: wall times are inflated by other engineers' work (load average per row);",
        "CPU time is this process's own. A quiet re-run: the command above.",
        "",
    ]
    header = ["model", "clip", "signal metrics (peer)", "SIM, all sources (wall)", "CPU", "per source"]
    header += ["verdict final after the metrics", "peak RSS", "added by SIM", "load average"]
    seconds = ("signal_metrics_s", "sim_s", "sim_cpu_s", "per_source_s", "verdict_after_metrics_s")
    rows = (
        [c["model"], f"{c['seconds']:g} s", *(f"{c[k]:.2f} s" for k in seconds)]
        + [f"{c['peak_rss_mib']:.0f} MiB", f"{c['added_by_sim_mib']:.0f} MiB", load_text(c["load_average"])]
        for c in result["cost"]
    )
    return "\n".join(lines + table(header, rows)) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="10,64,600", help="clip lengths in seconds, comma-separated")
    parser.add_argument("--models", default="ge2e,wavlm", help="ge2e, wavlm (random, full size) or a directory")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    from core.analysis.speaker_models import build_random_wavlm

    with tempfile.TemporaryDirectory() as scratch:
        models = [
            str(build_random_wavlm(Path(scratch) / "wavlm", full_size=True)) if m == "wavlm" else m
            for m in args.models.split(",")
        ]
        result: dict = {
            **provenance("bench/voice_cost.py"),
            "cost": cost([float(x) for x in args.lengths.split(",")], models),
        }
    for c in result["cost"]:  # the scratch folder is gone: name the model by what it is
        c["model"] = c["model"].replace(str(Path(tempfile.gettempdir())), "<tmp>")
    write_results(args.out, "voice_cost", result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
