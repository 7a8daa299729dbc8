"""Cold start: wall time from process start to three green readiness checks; writes cold_start.{json,md}.

    python -m bench.cold_start --checkpoint /tmp/full --device cuda:0 --out bench/results

Each run starts a fresh ``python -m core check`` (what the service does before it serves:
imports, weights onto the device, CUDA present, weights resident, a test round trip) and times it from
outside: from the process's start to its READY line, and to its exit. The web UI adds its own import
and build time on top (measured where gradio is installed; the GPU image has none).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one_run(args) -> dict:
    """One fresh ``python -m core check``: seconds to its READY line and to its exit, and its report."""
    command = [sys.executable, "-m", "core", "-v", "check", "--model", args.checkpoint, "--device", args.device]
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # each line arrives when it is printed
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, ready_s = [], None
    assert child.stdout is not None and child.stderr is not None
    for line in child.stdout:
        lines.append(line.rstrip())
        if line.strip() in ("READY", "NOT READY"):
            ready_s = time.perf_counter() - start
    child.wait(timeout=args.timeout_s)
    exit_s = time.perf_counter() - start
    stderr = child.stderr.read()
    loaded = re.search(r"model loaded from .* in ([0-9.]+) s", stderr)
    steps = {}
    for line in lines:  # "1. CUDA present     PASS     <detail> (0.00 s)"
        found = re.match(r"\d\. (.+?)\s+(PASS|FAIL|SKIPPED)\s.*\(([0-9.]+) s\)$", line)
        if found:
            steps[found.group(1)] = {"status": found.group(2).lower(), "seconds": float(found.group(3))}
    return {
        "ready_s": ready_s,
        "exit_s": exit_s,
        "ok": "READY" in lines,
        "load_s": float(loaded.group(1)) if loaded else None,
        "steps": steps,
        "stdout": lines[-6:],
        "stderr_tail": stderr[-1500:],
    }


def markdown(result: dict) -> str:
    runs = result["runs"]
    lines = [
        f"# Cold start on {result['device']}: process start to three green checks",
        "",
        (
            f"`python -m core check --model {result['checkpoint']} --device {result['device']}`, "
            f"{len(runs)} fresh processes, {result['date']}. Median time to READY: "
            f"**{result['median_ready_s']:.2f} s** (all green: {result['all_ok']})."
        ),
        "",
        "| run | to READY s | to exit s | model load s | CUDA s | weights s | round trip s | ok |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        steps = r.get("steps", {})
        titles = ("CUDA present", "Weights resident", "Test round trip")
        cells = [f"{steps[n]['seconds']:.2f}" if n in steps else "—" for n in titles]
        load = "—" if r.get("load_s") is None else f"{r['load_s']:.2f}"
        ready = "—" if r["ready_s"] is None else f"{r['ready_s']:.2f}"
        lines.append(f"| {i} | {ready} | {r['exit_s']:.2f} | {load} | {' | '.join(cells)} | {r['ok']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="/tmp/full")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--timeout-s", type=float, default=120.0)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = p.parse_args(argv)
    runs = [one_run(args) for _ in range(args.runs)]
    result = {
        "device": args.device,
        "checkpoint": args.checkpoint,
        "runs": runs,
        "median_ready_s": statistics.median(r["ready_s"] or math.inf for r in runs),
        "all_ok": all(r["ok"] for r in runs),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "cold_start-" + ("cuda" if args.device.startswith("cuda") else "cpu")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (out / f"{stem}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
