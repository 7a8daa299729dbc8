"""What the reference codecs (anchors) add to a 30 s round trip on this machine.

    python -m bench.anchors_bench                          # tiny random checkpoint, CPU
    python -m bench.anchors_bench --model DIR --repeats 5  # another checkpoint for the round trip's scale

Times, for 30 s of speech (the recorded asset, looped), with medians over ``--repeats`` runs and the
load average at each run (the development machine is shared; figures are noisy):

- each anchor alone (``core.anchors.make_anchors``: the real FFmpeg encoder and decoder through
  PyAV, or the low-pass filter), and its bitrate from the encoded bytes;
- what the page adds to a round trip for the default anchors (``--anchors`` default): the round
  trip's anchors and their WAVs (``webui.jobs.compare.anchors_of``) plus the player's
  manifest for them (loudness gain and residual WAV each, ``webui.jobs.lab.base_manifest`` with and
  without them). Budget: under 1 s together;
- the same for every anchor;
- for scale, the official ``Qwen3TTSTokenizer`` encode + decode of the same 30 s on the checkpoint
  (random weights: a speed figure only).

Writes ``bench/results/anchors_bench.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import cpu_name  # noqa: E402
from core.anchors import ANCHORS, DEFAULT_ANCHORS, make_anchors, parse_anchors  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402

BUDGET_S = 1.0  # the issue's bound on the default anchors' extra work for a 30 s round trip
CLIP_S = 30.0  # seconds of audio
SOURCE = ROOT / "webui" / "assets" / "speech_male_24k.wav"


def looped(seconds: float) -> np.ndarray:
    speech, rate = sf.read(SOURCE, dtype="float32")
    assert rate == SAMPLE_RATE, rate
    return np.tile(speech, int(np.ceil(seconds * SAMPLE_RATE / speech.size)))[: int(seconds * SAMPLE_RATE)]


def median(values: list[float]) -> float:
    return statistics.median(values)


def page_extra(samples: np.ndarray, ids: list[str], folder: Path, original_wav: Path, reconstruction_wav: Path) -> dict:
    """The page's added work for ``ids``: the round trip's extra sources, then the manifest's part for them."""
    from core.settings import Settings
    from webui.jobs import compare as compare_jobs
    from webui.jobs import lab as lab_jobs
    from webui.jobs import lab_analysis

    limits = Settings().audio_limits()
    run = Path(tempfile.mkdtemp(dir=folder))
    wall, cpu = time.perf_counter(), time.process_time()
    extra = compare_jobs.anchors_of(samples, ids, run, "clip")
    roundtrip = time.perf_counter() - wall, time.process_time() - cpu
    timings = []
    for sources in ([], extra.sources):
        lab_analysis.forget()
        out = Path(tempfile.mkdtemp(dir=folder))
        wall, cpu = time.perf_counter(), time.process_time()
        lab_jobs.base_manifest(original_wav, reconstruction_wav, out, limits, None, extra=sources)
        timings.append((time.perf_counter() - wall, time.process_time() - cpu))
    manifest = timings[1][0] - timings[0][0], timings[1][1] - timings[0][1]
    return {
        "roundtrip_extra_s": roundtrip[0],
        "manifest_extra_s": manifest[0],
        "total_extra_s": roundtrip[0] + manifest[0],
        "total_extra_cpu_s": roundtrip[1] + manifest[1],
    }


def official_roundtrip_s(model_dir: Path, samples: np.ndarray) -> float:
    """The official tokenizer's encode + decode of ``samples`` on the CPU (one warm run timed)."""
    import torch

    from core.model.weights import import_qwen_tts

    tokenizer = import_qwen_tts().Qwen3TTSTokenizer.from_pretrained(
        str(model_dir), device_map="cpu", dtype=torch.float32
    )
    short = samples[:SAMPLE_RATE]
    tokenizer.decode(tokenizer.encode(short, sr=SAMPLE_RATE))  # warm
    start = time.perf_counter()
    encoded = tokenizer.encode(samples, sr=SAMPLE_RATE)
    tokenizer.decode(encoded)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", type=Path, default=None, help="checkpoint for the official round trip's scale")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument(
        "--long-minutes", type=float, default=10.0, help="one run of the defaults on a long clip (0: none)"
    )
    parser.add_argument(
        "--defaults", default=DEFAULT_ANCHORS, help="the default set to measure (a candidate: lp3.5,amr,opus6,mp3)"
    )
    parser.add_argument("--name", default="anchors_bench", help="result file stem under --out")
    args = parser.parse_args(argv)
    samples = looped(CLIP_S)
    folder = Path(tempfile.mkdtemp(prefix="anchors-bench-"))
    original_wav = folder / "original.wav"
    reconstruction_wav = folder / "reconstruction.wav"
    sf.write(original_wav, samples, SAMPLE_RATE, subtype="FLOAT")
    sf.write(reconstruction_wav, samples * np.float32(0.9), SAMPLE_RATE, subtype="FLOAT")  # the page's timing only
    defaults = [a.id for a in parse_anchors(args.defaults)]
    everything = [a.id for a in ANCHORS]
    make_anchors(samples[: 2 * SAMPLE_RATE], ANCHORS)  # warm: imports, filter design, encoder lookup
    page_extra(samples[: 2 * SAMPLE_RATE], defaults, folder, original_wav, reconstruction_wav)  # and the page's

    per_anchor: dict[str, list[float]] = {a.id: [] for a in ANCHORS}
    per_anchor_cpu: dict[str, list[float]] = {a.id: [] for a in ANCHORS}
    bitrates: dict[str, float | None] = {}
    runs: list[dict] = []
    for _ in range(args.repeats):
        load = os.getloadavg()
        for anchor in ANCHORS:
            cpu = time.process_time()
            (a,) = make_anchors(samples, [anchor]).made
            per_anchor_cpu[a.id].append(time.process_time() - cpu)
            per_anchor[a.id].append(a.seconds)
            bitrates[a.id] = a.bitrate_bps
        runs.append(
            {
                "loadavg": load,
                "default": page_extra(samples, defaults, folder, original_wav, reconstruction_wav),
                "all": page_extra(samples, everything, folder, original_wav, reconstruction_wav),
            }
        )
    result: dict = {
        "clip_s": CLIP_S,
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "repeats": args.repeats,
        "loadavg_per_run": [r["loadavg"] for r in runs],
        "budget_s": BUDGET_S,
        "default_anchors": defaults,
        "per_anchor_median_s": {k: median(v) for k, v in per_anchor.items()},
        "per_anchor_cpu_median_s": {k: median(v) for k, v in per_anchor_cpu.items()},
        "bitrate_bps": bitrates,
        "default_extra_median_s": {k: median([r["default"][k] for r in runs]) for k in runs[0]["default"]},
        "all_extra_median_s": {k: median([r["all"][k] for r in runs]) for k in runs[0]["all"]},
        "runs": runs,
    }
    result["default_within_budget"] = result["default_extra_median_s"]["total_extra_s"] < BUDGET_S
    result["default_cpu_within_budget"] = result["default_extra_median_s"]["total_extra_cpu_s"] < BUDGET_S
    if args.long_minutes > 0:
        long = looped(args.long_minutes * 60)
        load = os.getloadavg()
        wall, cpu = time.perf_counter(), time.process_time()
        made = make_anchors(long, parse_anchors(args.defaults))
        result["long_clip"] = {
            "minutes": args.long_minutes,
            "loadavg": load,
            "default_anchors_s": time.perf_counter() - wall,
            "default_anchors_cpu_s": time.process_time() - cpu,
            "made": [a.id for a in made.made],
        }
    if args.model:
        result["official_roundtrip_s"] = official_roundtrip_s(args.model, samples)
        result["official_model"] = str(args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(r: dict) -> str:
    loads = ", ".join(f"{la[0]:.1f}" for la in r["loadavg_per_run"])
    lines = [
        "# Anchors: extra work for a 30 s round trip",
        "",
        f"`python -m bench.anchors_bench` on {r['cpu']} ({r['cpu_count']} cores), {r['repeats']} runs, medians; "
        f"1-minute load average at each run: {loads} (a shared machine: figures are noisy).",
        "",
        f"**Default anchors ({', '.join(r['default_anchors'])}): "
        f"{r['default_extra_median_s']['total_extra_s']:.2f} s** added to a 30 s round trip "
        f"(budget {r['budget_s']:g} s: {'within' if r['default_within_budget'] else 'OVER'}): "
        f"{r['default_extra_median_s']['roundtrip_extra_s']:.2f} s making them and writing their WAVs, "
        f"{r['default_extra_median_s']['manifest_extra_s']:.2f} s for their loudness gains and residuals in the player. "
        f"Every anchor: {r['all_extra_median_s']['total_extra_s']:.2f} s.",
        "",
        f"CPU time of the same work (one thread; what the wall time is on a quiet machine): default "
        f"{r['default_extra_median_s']['total_extra_cpu_s']:.2f} s "
        f"({'within' if r['default_cpu_within_budget'] else 'OVER'} the budget), every anchor "
        f"{r['all_extra_median_s']['total_extra_cpu_s']:.2f} s.",
        "",
        "| anchor | wall time for 30 s (median) | CPU time (median) | bitrate from the bytes |",
        "|---|---:|---:|---:|",
    ]
    for name, seconds in r["per_anchor_median_s"].items():
        rate = r["bitrate_bps"].get(name)
        cpu = r["per_anchor_cpu_median_s"][name]
        lines.append(
            f"| {name} | {seconds:.3f} s | {cpu:.3f} s | {'—' if rate is None else f'{rate / 1000:.2f} kbit/s'} |"
        )
    if "long_clip" in r:
        long = r["long_clip"]
        lines += [
            "",
            f"A {long['minutes']:g}-minute clip (one run, load {long['loadavg'][0]:.1f}): the default anchors took "
            f"{long['default_anchors_s']:.1f} s ({long['default_anchors_cpu_s']:.1f} s CPU): they grow linearly with the "
            "clip and are made block by block (the encoders take 10 s blocks, the low-pass 2.7 s FFT blocks).",
        ]
    if "official_roundtrip_s" in r:
        lines += [
            "",
            f"For scale: the official `Qwen3TTSTokenizer` encode + decode of the same 30 s on "
            f"`{Path(r['official_model']).name}` took {r['official_roundtrip_s']:.2f} s (random weights: speed only).",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
