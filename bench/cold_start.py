"""Cold start: wall time from process start to three green readiness checks; writes cold_start.{json,md}.

    python -m bench.cold_start --checkpoint /tmp/full --device cuda:0 --out bench/results

Each run starts a fresh ``python -m core check --json`` (what the service does before it serves:
imports, weights onto the device, CUDA present, weights resident, a test round trip) and times it from
outside, from the process's start to its exit after printing the report. The web UI adds its own
import and build time on top (measured where gradio is installed; the GPU image has none).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one_run(args) -> dict:
    command = [sys.executable, "-m", "core", "check", "--json", "--model", args.checkpoint, "--device", args.device]
    start = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout_s)
    wall = time.perf_counter() - start
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return {"wall_s": wall, "ok": False, "error": (done.stderr or done.stdout)[-2000:]}
    steps = {s["name"]: {"status": s["status"], "seconds": s["seconds"]} for s in report["steps"]}
    return {"wall_s": wall, "ok": bool(report["ok"]), "load_s": report["engine"]["load_seconds"], "steps": steps}


def markdown(result: dict) -> str:
    runs = result["runs"]
    lines = [
        f"# Cold start on {result['device']}: process start to three green checks",
        "",
        (
            f"`python -m core check --json --model {result['checkpoint']} --device {result['device']}`, "
            f"{len(runs)} fresh processes, {result['date']}. Median wall time: "
            f"**{result['median_wall_s']:.2f} s** (all green: {result['all_ok']})."
        ),
        "",
        "| run | wall s | model load s | CUDA s | weights s | round trip s | ok |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        steps = r.get("steps", {})
        cells = [f"{steps[n]['seconds']:.2f}" if n in steps else "—" for n in ("cuda", "weights", "roundtrip")]
        load = "—" if r.get("load_s") is None else f"{r['load_s']:.2f}"
        lines.append(f"| {i} | {r['wall_s']:.2f} | {load} | {' | '.join(cells)} | {r['ok']} |")
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
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
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
