"""The listening lab's own work for a 30 s clip: the codebook ladder (five levels) minus its five
model decodes, plus the quality timeline. Budget: 1 s together on the 2-core development machine.

    python -m bench.lab_overhead                      # tiny random checkpoint, CPU
    python -m bench.lab_overhead --model DIR --device cuda:0 --long-minutes 0

It calls the real Gradio handlers (``webui.tabs.lab.LabHandlers``) as the server does, minus the HTTP
transport: ``/timeline`` (residual WAV, BS.1770 loudness of three versions, timeline, waveform
envelope: no model work at all) and ``/ladder`` with the round trip's token file (so no encode),
whose UI work is its wall time minus the five decodes the engine timed. The official
``Qwen3TTSTokenizer.decode`` of the same codes runs in the same process, for scale. A 30-minute
clip then goes through ``/timeline`` to show what the browser receives (manifest bytes) and how
long it takes. Writes ``bench/results/lab_overhead.json`` and ``.md``.
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

import numpy as np
import soundfile as sf
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import created, host, summarize  # noqa: E402
from core import tokens  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.nn import ladder  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.units import MIB  # noqa: E402
from webui.serving.workspace import Workspace  # noqa: E402
from webui.tabs.lab import LabHandlers  # noqa: E402
from webui.tabs.roundtrip import RoundTripHandlers  # noqa: E402

logger = logging.getLogger("bench.lab_overhead")

BUDGET_S = 1.0  # seconds of lab UI work (ladder minus decodes, plus timeline) per 30 s clip
CLIP_S = 30.0  # seconds of audio
SOURCE = ROOT / "webui" / "assets" / "speech_male_24k.wav"  # real (synthetic) speech, 24 kHz mono
RATE = 24_000  # Hz


def looped(seconds: float) -> np.ndarray:
    speech, rate = sf.read(SOURCE, dtype="float32")
    assert rate == RATE, rate
    return np.tile(speech, int(np.ceil(seconds * RATE / speech.size)))[: int(seconds * RATE)]


def time_lab(lab: LabHandlers, original: str, reconstruction: str, downloads: list[str]) -> dict:
    from webui.jobs import lab_analysis

    lab_analysis.forget()  # each run as a new clip: the timeline analyses it, the ladder reuses that
    start = time.perf_counter()
    manifest, value, _timeline = lab.timeline(original, reconstruction, None)
    timeline_s = time.perf_counter() - start
    start = time.perf_counter()
    *_, details = lab.ladder(original, downloads, [str(k) for k in ladder.DEFAULT_LEVELS], manifest, None)
    ladder_wall = time.perf_counter() - start
    decodes = sum(row["decode_s"] for row in details["levels"])
    return {
        "timeline_s": timeline_s,
        "ladder_wall_s": ladder_wall,
        "ladder_decodes_s": decodes,
        "ladder_ui_s": ladder_wall - decodes,
        "total_ui_s": timeline_s + ladder_wall - decodes,
        "manifest_bytes": len(value.encode()),
    }


def official_decode_s(engine: Engine, token_file: str) -> float:
    codes = tokens.load_tokens(token_file).codes.astype(np.int64)
    tok = engine._tokenizer  # the official wrapper around the very same model object
    assert tok is not None, "the engine is loaded before the official decode is timed"
    start = time.perf_counter()
    tok.decode({"audio_codes": torch.from_numpy(codes)})
    return time.perf_counter() - start


def long_clip(lab: LabHandlers, work: Path, minutes: float) -> dict:
    """/timeline on a long clip: its time and what the page receives."""
    x = looped(minutes * 60)
    y = x + 0.01 * np.random.default_rng(0).standard_normal(x.size).astype(np.float32)
    paths = work / "long_a.wav", work / "long_b.wav"
    sf.write(paths[0], x, RATE, subtype="FLOAT")
    sf.write(paths[1], y, RATE, subtype="FLOAT")
    del x, y
    start = time.perf_counter()
    manifest, value, timeline = lab.timeline(str(paths[0]), str(paths[1]), None)
    seconds = time.perf_counter() - start
    return {
        "minutes": minutes,
        "timeline_s": seconds,
        "manifest_bytes": len(value.encode()),
        "plot_points": len(timeline["time_s"]),
        "envelope_columns": len(manifest["envelope"]["max"]),
        "audio_file_bytes": os.path.getsize(paths[0]),
    }


def run(model: str | None, device: str, repeats: int, long_minutes: float, work: Path) -> dict:
    if model is None:
        from core.model.checkpoints import build_tiny_checkpoint

        model = str(build_tiny_checkpoint(work / "tiny"))
    engine = Engine(Settings(model=model, device=device, max_duration_s=max(1800.0, long_minutes * 60 + 1)))
    if not engine.warm_up().ok:
        raise SystemExit(f"engine not ready: {engine.error}")
    workspace = Workspace(work / "requests")
    roundtrip = RoundTripHandlers(engine, workspace)
    lab = LabHandlers(engine, workspace)
    clip = work / "clip_30s.wav"
    sf.write(clip, looped(CLIP_S), RATE, subtype="PCM_16")
    load_before = os.getloadavg()
    out = roundtrip.roundtrip(str(clip))
    original, reconstruction, downloads = out[0], out[1], out[6]
    time_lab(lab, original, reconstruction, downloads)  # warm-up: imports, colour maps, pyloudnorm filters
    runs = [time_lab(lab, original, reconstruction, downloads) for _ in range(repeats)]
    official = [official_decode_s(engine, downloads[0]) for _ in range(max(1, repeats // 2))]
    results = {
        "clip_s": CLIP_S,
        "budget_s": BUDGET_S,
        "levels": list(ladder.DEFAULT_LEVELS),
        "timeline": summarize([r["timeline_s"] for r in runs]),
        "ladder_ui": summarize([r["ladder_ui_s"] for r in runs]),
        "ladder_decodes": summarize([r["ladder_decodes_s"] for r in runs]),
        "total_ui": summarize([r["total_ui_s"] for r in runs]),
        "manifest_bytes": runs[-1]["manifest_bytes"],
        "official_decode_s": statistics.median(official),
    }
    results["within_budget"] = results["total_ui"]["median_s"] <= BUDGET_S
    if long_minutes > 0:
        results["long"] = long_clip(lab, work, long_minutes)
    results.update(
        {
            "model": model,
            "device": device,
            "repeats": repeats,
            "machine": host(load_before),
            "created": created(),
        }
    )
    return results


def markdown(r: dict) -> str:
    t, lu, tot = r["timeline"], r["ladder_ui"], r["total_ui"]
    lines = [
        "# Listening lab overhead (everything but the model decodes)",
        "",
        (
            f"{r['clip_s']:.0f} s clip, ladder levels {r['levels']}, {r['repeats']} runs after one warm-up, model "
            f"`{r['model']}` on {r['device']}, {r['machine']['cpus']} CPUs, load average "
            f"{r['machine']['loadavg_before'][0]:.2f} before / {r['machine']['loadavg_after'][0]:.2f} after."
        ),
        "",
        (
            f"**Ladder UI work + timeline, median: {tot['median_s']:.3f} s** "
            f"({'within' if r['within_budget'] else 'OVER'} the {r['budget_s']} s budget)."
        ),
        "",
        "| part | median | min..max |",
        "|---|---|---|",
        (
            f"| `/timeline` (residual, loudness x3, timeline, envelope) | {t['median_s']:.3f} s | "
            f"{t['min_s']:.3f}..{t['max_s']:.3f} s |"
        ),
        (
            f"| `/ladder` minus its decodes (5 WAVs, log-mels, metrics, spectrograms, loudness) | {lu['median_s']:.3f} s | "
            f"{lu['min_s']:.3f}..{lu['max_s']:.3f} s |"
        ),
        f"| together | **{tot['median_s']:.3f} s** | {tot['min_s']:.3f}..{tot['max_s']:.3f} s |",
        f"| (the five decodes, model work) | {r['ladder_decodes']['median_s']:.3f} s | |",
        f"| (one official `Qwen3TTSTokenizer.decode` of the same codes) | {r['official_decode_s']:.3f} s | |",
        "",
        (
            f"The page receives a {r['manifest_bytes'] / 1024:.1f} KiB manifest (paths, gains, timeline, envelope); "
            "audio comes from the request folder in byte ranges."
        ),
    ]
    if "long" in r:
        g = r["long"]
        long_line = (
            f"A {g['minutes']:g}-minute clip: `/timeline` took {g['timeline_s']:.1f} s; the page receives "
            f"{g['manifest_bytes'] / 1024:.1f} KiB ({g['plot_points']} timeline points, {g['envelope_columns']} "
            f"waveform columns) instead of a {g['audio_file_bytes'] / MIB:.0f} MiB WAV per version."
        )
        lines += ["", long_line]
    lines += ["", "Reproduce: `nice python -m bench.lab_overhead`.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="checkpoint directory (default: build the tiny one)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--long-minutes", type=float, default=30.0, help="0 skips the long-clip timeline")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="lab-overhead-") as tmp:
        results = run(args.model, args.device, args.repeats, args.long_minutes, Path(tmp))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lab_overhead.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "lab_overhead.md").write_text(markdown(results))
    print(markdown(results))
    return 0 if results["within_budget"] else 1


if __name__ == "__main__":
    sys.exit(main())
