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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _read(pipe, sink: list, start: float) -> None:
    for line in pipe:
        sink.append((time.perf_counter() - start, line.rstrip()))


def one_run(args) -> dict:
    """One fresh ``python -m core check``: seconds to its READY line and to its exit, its report, and
    when each of its lines arrived (stdout and the log on stderr, read as they come)."""
    command = [sys.executable, "-m", "core", "-v", "check", "--model", args.checkpoint, "--device", args.device]
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # each line arrives when it is printed
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    out: list[tuple[float, str]] = []
    err: list[tuple[float, str]] = []
    readers = [
        threading.Thread(target=_read, args=(p, s, start)) for p, s in ((child.stdout, out), (child.stderr, err))
    ]
    for reader in readers:
        reader.start()
    child.wait(timeout=args.timeout_s)
    exit_s = time.perf_counter() - start
    for reader in readers:
        reader.join()
    lines = [line for _, line in out]
    ready_s = next((t for t, line in out if line.strip() in ("READY", "NOT READY")), None)
    stderr = "\n".join(line for _, line in err)
    loaded = re.search(r"model loaded from .* in ([0-9.]+) s", stderr)
    imported = re.search(r"imported qwen_tts in ([0-9.]+) s", stderr)
    steps = {}
    for line in lines:  # "1. CUDA present     PASS     <detail> (0.00 s)"
        found = re.match(r"\d\. (.+?)\s+(PASS|FAIL|SKIPPED)\s.*\(([0-9.]+) s\)$", line)
        if found:
            steps[found.group(1)] = {"status": found.group(2).lower(), "seconds": float(found.group(3))}
    timeline = sorted([(t, "out", line) for t, line in out] + [(t, "log", line) for t, line in err])
    return {
        "ready_s": ready_s,
        "exit_s": exit_s,
        "ok": "READY" in lines,
        "load_s": float(loaded.group(1)) if loaded else None,
        "import_qwen_tts_s": float(imported.group(1)) if imported else None,
        "first_log_s": err[0][0] if err else None,  # python, torch and core imported, the command parsed
        "steps": steps,
        "timeline": [(round(t, 3), kind, line[:200]) for t, kind, line in timeline[:60]],
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
            f"**{result['median_ready_s']:.2f} s** (all green: {result['all_ok']}). {result.get('note', '')}"
        ),
        "",
        "First log line: Python, torch and core imported and the command parsed. Import qwen_tts is part of model load.",
        "",
        (
            "| run | to READY s | to exit s | first log line s | import qwen_tts s | model load s "
            "| CUDA s | weights s | round trip s | ok |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        steps = r.get("steps", {})
        titles = ("CUDA present", "Weights resident", "Test round trip")
        cells = [f"{steps[n]['seconds']:.2f}" if n in steps else "—" for n in titles]
        load, ready, first, imported = (
            "—" if r.get(key) is None else f"{r[key]:.2f}"
            for key in ("load_s", "ready_s", "first_log_s", "import_qwen_tts_s")
        )
        lines.append(
            f"| {i} | {ready} | {r['exit_s']:.2f} | {first} | {imported} | {load} | {' | '.join(cells)} | {r['ok']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="/tmp/full")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--timeout-s", type=float, default=120.0)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    p.add_argument("--note", default="", help="a sentence on the conditions, printed under the table's heading")
    args = p.parse_args(argv)
    runs = [one_run(args) for _ in range(args.runs)]
    result = {
        "device": args.device,
        "checkpoint": args.checkpoint,
        "runs": runs,
        "median_ready_s": statistics.median(r["ready_s"] or math.inf for r in runs),
        "all_ok": all(r["ok"] for r in runs),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "note": args.note,
        "bytecode_prefix": os.environ.get("PYTHONPYCACHEPREFIX"),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "cold_start-" + ("cuda" if args.device.startswith("cuda") else "cpu")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (out / f"{stem}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
