"""A live session beside another client's long round trip, on a CPU: does the session keep real time,
and where does it wait?

    python -m bench.live_beside_job [--minutes 10] [--metrics] [--repeat 1] [--out bench/results] [--tag cpu]

The server of the test: the tiny checkpoint (random weights: no quality claims) on the CPU, the
``/live/ws`` route on uvicorn in this process; the job runs in a thread of it, as a Gradio worker
runs it: ``webui.jobs.codec.roundtrip`` of a ``--minutes`` WAV at 44.1 kHz (reading, resampling,
the default anchors, the encode and decode, the WAVs, the spectrogram), then with ``--metrics`` the
metrics follow-up. The microphone is ``bench.live_pacer`` in a process of its own, 20 ms blocks at
48 kHz on the wall clock. The same trip runs alone first: its timing is the reference and its codes
and audio must be equal beside the session.

Measured: whether the session was stopped (and the sentence), how late its replies came, the job's
holds of the model lock (each stretch between taking it and handing it over), the session's waits
for it, the job's phases, and the CPU seconds per thread (``/proc/self/task``). Writes
``live_beside_job-<tag>.json`` and ``.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.live_pacer import speechlike  # noqa: E402
from core.model.turns import TurnLock  # noqa: E402

logger = logging.getLogger(__name__)


class TimedLock(TurnLock):
    """The engine's lock, recording how long a job held it in one stretch before a live frame that
    waited got it (at a hand-over or the job's end)."""

    def __init__(self) -> None:
        super().__init__()
        self.holds: list[float] = []
        self._since = 0.0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = super().acquire(blocking, timeout)
        if got and self._depth == 1:
            self._since = time.perf_counter()
        return got

    def release(self) -> None:
        if self._depth == 1 and self.waiting():  # a frame waited for this release
            self.holds.append(time.perf_counter() - self._since)
        super().release()

    def give_turn(self) -> None:
        before, asked = self.given, time.perf_counter()
        super().give_turn()
        if self.given != before:
            self.holds.append(asked - self._since)
            self._since = time.perf_counter()


def thread_cpu(seen: dict[int, tuple[str, float]]) -> None:
    """Update ``seen`` (thread id -> (name, CPU seconds so far)) from ``/proc/self/task``; threads
    without a Python name are OpenMP's helpers or native."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tid = int(task.name)
        name = names.get(tid) or seen.get(tid, ("native (OpenMP helpers)", 0.0))[0]
        seen[tid] = (name, (int(fields[11]) + int(fields[12])) / tick)


def by_name(seen: dict[int, tuple[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, cpu in seen.values():
        key = name.split("_")[0] if name.startswith("AnyIO") else name
        out[key] = out.get(key, 0.0) + cpu
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(engine, workspace):
    """``/live/ws`` on uvicorn in a thread of this process; (port, server)."""
    import uvicorn
    from fastapi import FastAPI

    from webui.serving import live_socket

    app = FastAPI()
    app.router.routes.extend(live_socket.live_routes(engine, workspace))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws="wsproto"))
    threading.Thread(target=server.run, name="uvicorn", daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return port, server


def the_job(engine, wav: Path, folder: Path, metrics: bool, phases: list) -> dict:
    """The other client's work: the round trip of ``wav`` (and its metrics), as the Round trip tab does."""
    from core.analysis.judges import Judges
    from webui.jobs import codec

    folder.mkdir(parents=True)
    t0 = time.perf_counter()

    def progress(fraction, key, **_):
        if not phases or phases[-1][1] != key:
            phases.append((round(time.perf_counter() - t0, 3), key))

    out = codec.roundtrip(engine, wav, folder, engine.settings.audio_limits(), progress, ("lp3.5", "amr", "opus6"))
    trip_s = time.perf_counter() - t0
    done = {"trip_s": trip_s, "samples": out.samples, "codes": np.load(out.token_file)["codes"]}
    if metrics:
        assert out.samples is not None
        phases.append((round(time.perf_counter() - t0, 3), "metrics"))
        engine.live.cpu.batch(codec.measure_samples, *out.samples, Judges.of(engine.settings))  # as the tab does
    done["total_s"] = time.perf_counter() - t0
    return done


class SocketMic:
    """The microphone over ``/live/ws``: ``bench.live_pacer`` in a process of its own."""

    def __init__(self, port: int, seconds: float) -> None:
        self.client = subprocess.Popen(
            [sys.executable, "-m", "bench.live_pacer", "--port", str(port), "--seconds", str(seconds)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.client.stdout is not None
        self.ready = json.loads(self.client.stdout.readline())

    def stop(self) -> dict:
        assert self.client.stdin is not None
        try:
            self.client.stdin.write("stop\n")
            self.client.stdin.flush()
        except BrokenPipeError:
            pass
        out, _ = self.client.communicate(timeout=180)
        return json.loads(out.strip().splitlines()[-1])


class DirectMic:
    """The same microphone without the socket (``--direct``: a machine without the web stack): a
    thread of this process pushes 20 ms blocks at 48 kHz on the wall clock through the socket's own
    work (``webui.jobs.live.LiveRun``: the same lateness rule and stop)."""

    def __init__(self, engine, seconds: float) -> None:
        import struct

        from bench.live_pacer import BLOCK, RATE
        from webui.jobs import live

        self.run = live.LiveRun(engine.live.open(RATE), RATE, 1)
        self.ready: dict = {"direct": True}
        self.late: list[float] = []
        self.error: str | None = None
        self.sent_s = 0.0
        self.halt = threading.Event()
        signal = speechlike(10.0)

        def push() -> None:
            t0, sent = time.monotonic(), 0
            while sent < seconds * RATE and not self.halt.is_set():
                due = t0 + (sent + BLOCK) / RATE
                time.sleep(max(0.0, due - time.monotonic()))
                low = sent % signal.size
                data = struct.pack("<d", 0.0) + signal[low : low + BLOCK].astype("<f4").tobytes()
                try:
                    if self.run.push(data, time.monotonic()) is not None:
                        self.late.append(1000 * (time.monotonic() - due))
                except live.LiveEnd as e:
                    self.error = f"{e.key or e.cause} {e.params}"
                    break
                sent += BLOCK
            self.sent_s = sent / RATE

        self.thread = threading.Thread(target=push, name="mic", daemon=True)
        self.thread.start()

    def stop(self) -> dict:
        self.halt.set()
        self.thread.join()
        self.run.session.close()
        late = self.late or [float("nan")]
        return {
            "sent_s": round(self.sent_s, 2),
            "stopped_by": "server" if self.error else "stdin",
            "replies": len(self.late),
            "reply_late_ms": {
                k: round(float(f(late)), 1) for k, f in (("median", np.median), ("p95", _p95), ("max", max))
            },
            "error": self.error,
            "end": "error" if self.error else "done",
            "stats": None,
        }


def _p95(values) -> float:
    return float(np.percentile(values, 95))


def one_run(engine, wav: Path, work: Path, metrics: bool, port: int | None, minutes: float) -> dict:
    """One session beside one job; ``port`` None: the microphone without the socket (``DirectMic``)."""
    lock: TimedLock = engine._lock
    lock.holds.clear()
    phases: list = []
    seconds = minutes * 60 + 60
    mic = SocketMic(port, seconds) if port is not None else DirectMic(engine, seconds)
    ready = mic.ready
    time.sleep(1.0)  # the session runs alone for a second
    seen: dict[int, tuple[str, float]] = {}
    thread_cpu(seen)
    cpu_before = by_name(seen)
    sessions = list(engine.live._sessions)
    holder: dict = {}
    job = threading.Thread(
        target=lambda: holder.update(the_job(engine, wav, work / f"beside{time.time_ns()}", metrics, phases)),
        name="job",
    )
    started = time.perf_counter()
    job.start()
    while job.is_alive():
        thread_cpu(seen)
        job.join(0.2)
    job_s = time.perf_counter() - started
    thread_cpu(seen)
    cpu_after = by_name(seen)
    session = sessions[0] if sessions else None
    live = {}
    if session is not None:
        compute = np.asarray(session.frame_compute_s) * 1000
        live = {
            "frames": int(compute.size),
            "frame_compute_ms_median": round(float(np.median(compute)), 1) if compute.size else None,
            "frame_compute_ms_p95": round(float(np.percentile(compute, 95)), 1) if compute.size else None,
            "waited_job_s": round(session.waited_job_s, 2),
            "waited_live_s": round(session.waited_live_s, 2),
            "pushes_s": round(session.pushes_s, 2),
            "received_s": round(session.input.seconds, 2),
        }
    pacer = mic.stop()
    holds = np.asarray(lock.holds)
    cpu = {k: round(cpu_after.get(k, 0.0) - cpu_before.get(k, 0.0), 2) for k in cpu_after}
    return {
        "ready": ready,
        "job_s": round(job_s, 2),
        "trip_s": round(holder.get("trip_s", float("nan")), 2),
        "unchanged": None,
        "_result": holder,
        "stopped": pacer["stopped_by"] == "server",
        "pacer": pacer,
        "live": live,
        "lock_holds": {
            "count": int(holds.size),
            "max_s": round(float(holds.max()), 3) if holds.size else None,
            "p95_s": round(float(np.percentile(holds, 95)), 3) if holds.size else None,
            "total_s": round(float(holds.sum()), 2),
            "longest": [round(float(h), 3) for h in sorted(holds)[-5:]],
        },
        "phases": phases,
        "cpu_s_by_thread": {k: v for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]) if v > 0.05},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--metrics", action="store_true", help="the metrics follow-up after the trip")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--tag", default="cpu")
    parser.add_argument("--direct", action="store_true", help="the microphone without the socket (no web stack)")
    parser.add_argument("--hog", type=int, default=0, help="this many busy processes beside (another test worker)")
    parser.add_argument(
        "--before", action="store_true", help="as before the CPU share: batch work in the caller, one quantizer call"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import soundfile as sf

    from core.model.checkpoints import build_tiny_checkpoint
    from core.model.engine import Engine
    from core.settings import Settings
    from webui.serving.workspace import Workspace

    work = Path(tempfile.mkdtemp(prefix="live-beside-"))
    checkpoint = build_tiny_checkpoint(work / "tiny")
    engine = Engine(Settings(model=str(checkpoint), device="cpu", live_sessions=1), lock=TimedLock())
    engine.warm_up()
    if args.before:
        from core.nn import encoding

        encoding.QUANTIZE_FRAMES = 10**9
        engine.live.cpu.batch = lambda fn, *a: fn(*a)  # type: ignore[method-assign]  # in the caller's thread
    wav = work / "long.wav"
    sf.write(wav, speechlike(args.minutes * 60, rate=44_100, seed=5), 44_100, subtype="PCM_16")
    port, server = (None, None) if args.direct else serve(engine, Workspace(work / "ws"))

    t0 = time.perf_counter()
    alone = the_job(engine, wav, work / "alone", args.metrics, [])
    alone_s = time.perf_counter() - t0
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL) for _ in range(args.hog)
    ]
    runs = []
    for _ in range(args.repeat):
        run = one_run(engine, wav, work, args.metrics, port, args.minutes)
        got = run.pop("_result")
        run["unchanged"] = bool(
            "codes" in got
            and np.array_equal(got["codes"], alone["codes"])
            and all(np.array_equal(a, b) for a, b in zip(got["samples"], alone["samples"], strict=True))
        )
        runs.append(run)
        print(json.dumps(run, indent=1), flush=True)
    report = {
        "machine": {"cpus": len(os.sched_getaffinity(0)), "torch_threads": __import__("torch").get_num_threads()},
        "minutes": args.minutes,
        "metrics": args.metrics,
        "before": args.before,
        "hog": args.hog,
        "direct": args.direct,
        "alone_s": round(alone_s, 2),
        "runs": runs,
    }
    if server is not None:
        server.should_exit = True
    for hog in hogs:
        hog.kill()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"live_beside_job-{args.tag}.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"# A live session beside a {args.minutes:g}-minute round trip (tiny checkpoint, CPU)",
        "",
        f"`python -m bench.live_beside_job --minutes {args.minutes:g}{' --metrics' if args.metrics else ''} "
        f"--repeat {args.repeat} --tag {args.tag}{' --before' if args.before else ''}{' --direct' if args.direct else ''} --hog {args.hog}`; "
        f"{len(os.sched_getaffinity(0))} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
        f"load average {os.getloadavg()[0]:.1f} at the end; the trip alone: {alone_s:.1f} s (hogs start after it).",
        "",
        "| run | stopped | trip beside (s) | unchanged | longest lock hold (s) | waited for the job (s) "
        "| reply late p95 / max (ms) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, r in enumerate(runs, 1):
        late = r["pacer"]["reply_late_ms"]
        lines.append(
            f"| {i} | {r['stopped']} {r['pacer']['error'] or ''} | {r['job_s']} | {r['unchanged']} "
            f"| {r['lock_holds']['max_s']} | {r['live'].get('waited_job_s')} | {late['p95']} / {late['max']} |"
        )
    (out / f"live_beside_job-{args.tag}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
