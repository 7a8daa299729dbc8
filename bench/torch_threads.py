"""Live on a CPU by which threads run torch's work (``core.model.torch_threads``): the server's
arrangement before the two rules, after them, and everything in one thread.

    python -m bench.torch_threads --checkpoint /tmp/full [--seconds 4] [--sessions 3] [--rounds 2]

Full-size **random** checkpoint (no quality claims), layer scales 1.0, fp32, 2 torch threads, the
auto packet size (4 frames on a CPU). Each arrangement runs in a fresh process, ``--sessions``
unpaced sessions of ``--seconds`` each pushed a block of 80 ms at a time; the first session is the
warm-up, the rest are timed (model work per packet, real-time factor), and the process's threads are
counted at the end. Arrangements run interleaved, ``--rounds`` times, so a neighbour's load falls on
all of them:

- ``before``: the model loaded in the main thread, which also made the clip, and pushes from a worker
  thread (the server: it loads in its main thread, the web server pushes from its worker threads); the
  two rules are switched off in that process;
- ``now``: the same calls with the rules on (loading in a thread that ends; every session's work on
  the sessions' one thread);
- ``one thread``: loading, the clip and the pushes all in one thread that is not the main one, the
  rules off (what they aim at: one thread with a pool).

Writes ``bench/results/torch_threads.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import in_fresh_process, load_text, machine, set_layer_scales, signal, table, write_results  # noqa: E402

log = logging.getLogger("bench.torch_threads")
ARRANGEMENTS = ("before", "now", "one thread")


def _sessions(engine, x: np.ndarray, sessions: int) -> list[dict]:
    from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME

    out = []
    for _ in range(sessions):
        per_packet = []
        with engine.live.open(SAMPLE_RATE, paced=False) as session:
            for low in range(0, x.size, SAMPLES_PER_FRAME):
                t = time.perf_counter()
                step = session.push(x[low : low + SAMPLES_PER_FRAME])
                if step.codes.shape[0]:
                    per_packet.append(time.perf_counter() - t)
            session.finish()
        out.append(
            {"packet_ms_median": 1000 * float(np.median(per_packet)), "rtf": sum(per_packet) * SAMPLE_RATE / x.size}
        )
    return out[1:]  # the first is the warm-up


def _child(arrangement: str, checkpoint: str, seconds: float, sessions: int, queue) -> None:
    import torch

    from core.model import live_sessions, torch_threads
    from core.model.engine import Engine
    from core.settings import Settings

    torch.set_num_threads(2)
    if arrangement != "now":  # the two rules off: every call runs in the thread that makes it
        torch_threads.in_passing_thread = lambda fn, *args: fn(*args)
        live_sessions.LiveSessions.on_model_thread = lambda self, fn, *args: fn(*args)  # type: ignore[method-assign]
    result: dict = {}

    def setup(bench_work=lambda fn, *args: fn(*args)):
        engine = Engine(Settings(model=checkpoint, device="cpu", dtype="float32"))
        if not engine.load():  # as the server calls it: from the thread that started the process
            raise SystemExit(f"engine did not load: {engine.error}")
        bench_work(set_layer_scales, engine.model, 1.0)  # the bench's own torch work (the server has none)
        return engine, bench_work(signal, seconds, 1, "cpu")

    def pushes(engine, x):
        result["packet_frames"] = engine.live.packet_frames()
        result["sessions"] = _sessions(engine, x, sessions)

    if arrangement == "one thread":
        worker = threading.Thread(target=lambda: pushes(*setup()))
    else:
        engine, x = setup() if arrangement == "before" else setup(torch_threads.in_passing_thread)
        worker = threading.Thread(target=pushes, args=(engine, x))
    worker.start()
    worker.join()
    result["threads"] = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None
    queue.put(result)


def run(args) -> dict:
    out: dict = {"machine": machine("cpu"), "seconds": args.seconds, "runs": []}
    out["machine"]["loadavg_start"] = os.getloadavg()
    for round_index in range(args.rounds):
        for arrangement in ARRANGEMENTS:
            r = in_fresh_process(_child, arrangement, str(args.checkpoint), args.seconds, args.sessions)
            r.update(arrangement=arrangement, round=round_index, loadavg=os.getloadavg())
            out["runs"].append(r)
            log.info("%s: %s", arrangement, r)
    out["machine"]["loadavg_end"] = os.getloadavg()
    return out


def markdown(result: dict) -> str:
    m = result["machine"]
    rows = []
    for arrangement in ARRANGEMENTS:
        runs = [r for r in result["runs"] if r["arrangement"] == arrangement]
        packets = [s["packet_ms_median"] for r in runs for s in r["sessions"]]
        rtf = [s["rtf"] for r in runs for s in r["sessions"]]
        rows.append(
            [
                arrangement,
                f"{np.median(packets):.0f} ({min(packets):.0f}–{max(packets):.0f})",
                f"**{np.median(rtf):.3f}** ({min(rtf):.3f}–{max(rtf):.3f})",
                ", ".join(str(r["threads"]) for r in runs),
            ]
        )
    header = [
        "arrangement",
        "model work per 4-frame packet, ms: median (range)",
        "RTF, 1 session",
        "threads at the end",
    ]
    return "\n".join(
        [
            f"# Live on a CPU by which threads run torch: {m.get('cpu', 'CPU')} ({m.get('cpus', '?')} CPUs, 2 torch threads)",
            "",
            f"Full-size **random** checkpoint (no quality claims), layer scales 1.0, fp32, {result['seconds']:g} s "
            "sessions, unpaced, pushed 80 ms at a time; each arrangement in a fresh process, interleaved "
            f"({len(result['runs']) // len(ARRANGEMENTS)} rounds; the ranges are sessions of every round). "
            f"Load average {load_text(m['loadavg_start'])} at the start, {load_text(m['loadavg_end'])} at the end. "
            "`python -m bench.torch_threads` (its docstring says what each arrangement is).",
            "",
            *table(header, rows),
            "",
        ]
    )


def main(argv=None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--sessions", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    result = run(args)
    write_results(args.out, "torch_threads", result, markdown(result))
    return result


if __name__ == "__main__":
    main()
