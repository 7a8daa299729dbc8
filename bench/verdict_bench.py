"""The verdict's DistillMOS cost against clip length: ours (at most ``Settings.mos_windows`` windows of
7.68 s per clip, one at a time) and the official path (the package's own forward on the whole clip,
which batches a window per second of audio), each in a fresh process so its peak memory is its own.

    python -m bench.verdict_bench                       # 10 s, 64 s and 10 min; 3 repeats
    python -m bench.verdict_bench --lengths 10 64 --repeats 1

Per run: the time of the MOS of both clips (original and a noisy copy, as a verdict does) and the
process's peak resident memory over that step, measured from a baseline taken after the model is
loaded and the audio is in memory (``/proc/self/clear_refs`` resets the high-water mark). The
official path runs where it fits this machine (10 s and 64 s; 10 min would need about 36 GiB).
Every figure is a median over the repeats, with the load average at the time (the 2-core machine
is shared). Writes ``bench/results/verdict_bench.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
OFFICIAL_MAX_S = 64.0  # longer clips are not run on the official path (about 60 MB per audio second)


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def child(seconds: float, path: str) -> dict:
    """One measurement in this (fresh) process."""
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import soxr
    import torch

    from core.analysis import catalog
    from core.judging import verdict
    from tests.conftest import speechlike

    torch.set_num_threads(os.cpu_count() or 1)
    original = speechlike(seconds)
    noisy = (original + 0.05 * np.random.default_rng(0).standard_normal(original.size)).astype(np.float32)
    mos = verdict.predictor("cpu")
    mos.predict(original[: 24_000 * 8], 24_000, 1)  # load and warm the model
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current resident set
    base = _rss_mib()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    scores: list[float | None] = []
    if path == "ours":
        v = verdict.judge(original, noisy, {catalog.PESQ_WB: 3.0, catalog.STOI: 0.9}, 24_000)
        scores, windows = [v.mos_original, v.mos_reconstruction], len(v.windows)
    else:  # DistillMOS's own forward on each whole clip, resampled to 16 kHz
        with torch.inference_mode():
            for clip in (original, noisy):
                x = soxr.resample(clip, 24_000, verdict.MOS_RATE).astype(np.float32)
                scores.append(float(mos._model(torch.from_numpy(x)[None]).reshape(-1)[0]))
        windows = len(verdict.window_starts(int(seconds * verdict.MOS_RATE), 10**9))
    took = time.perf_counter() - started
    return {
        "clip_s": seconds,
        "path": path,
        "seconds": round(took, 2),
        "peak_rss_mib": round(_peak_mib(), 1),
        "growth_mib": round(_peak_mib() - base, 1),
        "windows_per_clip": windows,
        "mos": [None if s is None else round(s, 3) for s in scores],
        "load_1min": round(load, 2),
    }


def measure(seconds: float, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.verdict_bench", "--child", str(seconds), path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=float, nargs="+", default=[10.0, 64.0, 600.0], help="clip seconds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(float(args.child[0]), args.child[1])))
        return 0
    rows = []
    for seconds in args.lengths:
        for path in ("ours", "official"):
            if path == "official" and seconds > OFFICIAL_MAX_S:
                continue
            runs = [measure(seconds, path) for _ in range(args.repeats)]
            print(f"{seconds:g} s {path}: {[r['seconds'] for r in runs]} s", file=sys.stderr, flush=True)
            rows.append(
                {
                    **runs[0],
                    "seconds": statistics.median(r["seconds"] for r in runs),
                    "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in runs),
                    "growth_mib": statistics.median(r["growth_mib"] for r in runs),
                    "load_1min": [r["load_1min"] for r in runs],
                    "repeats": len(runs),
                    "all_seconds": [r["seconds"] for r in runs],
                }
            )
    machine = {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "verdict_bench.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Verdict: DistillMOS time and memory against clip length",
        "",
        "`python -m bench.verdict_bench` on the 2-core development machine (shared: load averages per run "
        "below). Both clips of a verdict (original and a noisy copy); medians of the repeats; memory is the "
        "peak over the MOS step, above the baseline with the model loaded and the audio in memory.",
        "",
        "| clip | path | windows per clip | MOS time, s (median) | peak RSS growth, MiB | peak RSS, MiB | load (1 min) |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['clip_s']:g} s | {r['path']} | {r['windows_per_clip']} | {r['seconds']:.2f} | "
            f"{r['growth_mib']:.0f} | {r['peak_rss_mib']:.0f} | {', '.join(f'{x:g}' for x in r['load_1min'])} |"
        )
    lines += [
        "",
        f"The official path is not run past {OFFICIAL_MAX_S:g} s: it batches one 7.68 s window per second of "
        "audio (about 60 MB each), so 10 min would need about 36 GiB.",
    ]
    (RESULTS / "verdict_bench.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
