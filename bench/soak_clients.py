"""Memory under load with several clients: a real server (``python -m webui``, its own process) and N
clients for M minutes, each looping what a visitor does: a round trip, its metrics, the verdict, the
listening lab's timeline, then a blind test (start, four answers, the results). Clients are told
apart as behind deploy/nginx: ``X-Real-IP`` from a trusted loopback proxy, so the per-client
limits apply to each of them as they would to real visitors.

    python -m bench.soak_clients                         # 8 clients, 5 minutes, tiny checkpoint
    python -m bench.soak_clients --clients 8 --minutes 5 --model DIR

The server's resident memory (psutil) is sampled every ``--every`` seconds. "Flat" means the
median of the last minute is within 10 % of the median of the second minute (the first is warm-up:
allocator pools, Gradio's caches, DistillMOS loading). Writes ``bench/results/soak_clients.json``
and ``.md`` with the load average, each client's completed loops, refusals (429) and errors.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))

from core.units import MIB  # noqa: E402  (after the path line, so the bench runs from any folder)

CLIP_S = 2.0  # seconds of speech per round trip: the soak is about memory, not model time
FLAT_SHARE = 0.10  # the last minute's median RSS may exceed the second minute's by this much


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """One visitor: its own address (X-Real-IP), its counts."""

    def __init__(self, url: str, ip: str):
        self.url, self.ip = url, ip
        self.loops = self.refused = self.errors = 0
        self.last_error = ""

    def _request(self, path: str, body: bytes | None = None, content_type: str = "application/json"):
        headers = {"X-Real-IP": self.ip}
        if body is not None:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.url + path, body, headers)
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.read()

    def upload(self, path: Path) -> dict:
        body = (
            b'--XX\r\nContent-Disposition: form-data; name="files"; filename="clip.wav"\r\n\r\n'
            + path.read_bytes()
            + b"\r\n--XX--\r\n"
        )
        server_path = json.loads(self._request("gradio_api/upload", body, "multipart/form-data; boundary=XX"))[0]
        return {"path": server_path, "meta": {"_type": "gradio.FileData"}}

    def call(self, api: str, data: list):
        """One event through /gradio_api/call; its output list. Retries a refusal after a pause."""
        for _ in range(30):
            try:
                event = json.loads(self._request(f"gradio_api/call/{api}", json.dumps({"data": data}).encode()))
            except urllib.error.HTTPError as e:
                if e.code != 429:
                    raise
                self.refused += 1
                time.sleep(2.0)
                continue
            text = self._request(f"gradio_api/call/{api}/{event['event_id']}").decode()
            kinds = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("event:")]
            last = next(line for line in reversed(text.splitlines()) if line.startswith("data:"))
            if not kinds or kinds[-1] != "complete":
                raise RuntimeError(f"{api}: {last[:300]}")
            return json.loads(last[5:])
        raise RuntimeError(f"{api}: refused 30 times")

    def loop(self, clip: dict) -> None:
        trip = self.call("roundtrip", [clip, [], False])
        original, reconstruction, details = _file(trip[0]), _file(trip[1]), trip[7]
        metrics = self.call("metrics", [original, reconstruction])[1]
        self.call("verdict", [original, reconstruction, metrics])
        self.call("timeline", [original, reconstruction, details])
        start = self.call("abx_start", [clip, 0, 1.5, 4, 16, False])
        token, trial = start[0], start[1]
        for _ in range(4):
            trial = self.call("abx_answer", [token, trial, "A"])[0]
        self.call("abx_results", [token])
        self.loops += 1


def _file(value: dict) -> dict:
    return {"path": value["path"], "meta": {"_type": "gradio.FileData"}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between memory readings")
    parser.add_argument("--model", type=Path, default=None, help="checkpoint (default: a tiny random one, built here)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="soak-"))
    model = args.model
    if model is None:
        from core.model.checkpoints import build_tiny_checkpoint

        model = build_tiny_checkpoint(work / "tiny")
    from tests.conftest import speechlike

    clip_path = work / "clip.wav"
    sf.write(clip_path, speechlike(CLIP_S), 24_000, subtype="PCM_16")
    port = _free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "CODEC_DATA_DIR": str(work / "data")}
    argv_server = [sys.executable, "-m", "webui", "--model", str(model), "--device", "cpu", "--port", str(port)]
    argv_server += ["--temp-dir", str(work / "root"), "--trusted-proxies", "127.0.0.1", "--log-level", "WARNING"]
    log = open(work / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(argv_server, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    samples: list[tuple[float, float]] = []
    clients = [Client(url, f"198.51.100.{i + 10}") for i in range(args.clients)]
    try:
        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, (work / "server.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(url + "ready", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(1.0)
        process = psutil.Process(server.pid)
        stop = threading.Event()
        started = time.monotonic()

        def visit(client: Client) -> None:
            clip = client.upload(clip_path)
            while not stop.is_set():
                try:
                    client.loop(clip)
                except Exception as e:  # noqa: BLE001 - counted and reported; the soak goes on
                    client.errors += 1
                    client.last_error = f"{type(e).__name__}: {e}"[:300]
                    time.sleep(1.0)

        threads = [threading.Thread(target=visit, args=(c,), daemon=True) for c in clients]
        for t in threads:
            t.start()
        while time.monotonic() - started < args.minutes * 60:
            samples.append((round(time.monotonic() - started, 1), process.memory_info().rss / MIB))
            print(
                f"{samples[-1][0]:6.0f} s  RSS {samples[-1][1]:7.0f} MiB  loops {sum(c.loops for c in clients)}",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(args.every)
        stop.set()
        for t in threads:
            t.join(timeout=600)
        samples.append((round(time.monotonic() - started, 1), process.memory_info().rss / MIB))
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()

    def median_between(a: float, b: float) -> float:
        return statistics.median(r for t, r in samples if a <= t < b) if any(a <= t < b for t, _ in samples) else 0.0

    end = samples[-1][0]
    second = median_between(60, 120)
    last = median_between(end - 60, end + 1)
    flat = last <= second * (1 + FLAT_SHARE)
    result = {
        "clients": args.clients,
        "minutes": args.minutes,
        "model": "tiny random checkpoint" if args.model is None else str(args.model),
        "load_1min_at_end": round(os.getloadavg()[0], 2),
        "rss_mib": [[t, round(r, 1)] for t, r in samples],
        "second_minute_median_mib": round(second, 1),
        "last_minute_median_mib": round(last, 1),
        "flat": flat,
        "per_client": [
            {"ip": c.ip, "loops": c.loops, "refused_429": c.refused, "errors": c.errors, "last_error": c.last_error}
            for c in clients
        ],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "soak_clients.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# Soak: {args.clients} clients for {args.minutes:g} minutes",
        "",
        f"`python -m bench.soak_clients --clients {args.clients} --minutes {args.minutes:g}` ({result['model']}, CPU, "
        f"the 2-core development machine shared with other work: load average {result['load_1min_at_end']} at the "
        "end). Each client loops round trip → metrics → verdict → timeline → blind test (start, 4 answers, results).",
        "",
        f"- server RSS, median of the second minute: **{second:.0f} MiB**; of the last minute: **{last:.0f} MiB** "
        f"({(last / second - 1) * 100 if second else 0:+.1f} %): {'flat' if flat else 'NOT flat'} "
        f"(allowed +{FLAT_SHARE:.0%})",
        f"- loops completed: {sum(c.loops for c in clients)} "
        f"({', '.join(str(c.loops) for c in clients)} per client); refusals (429, retried): "
        f"{sum(c.refused for c in clients)}; errors: {sum(c.errors for c in clients)}",
        "",
        "| t (s) | RSS (MiB) |",
        "|---:|---:|",
        *[f"| {t:.0f} | {r:.0f} |" for t, r in samples],
    ]
    (RESULTS / "soak_clients.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:8]))
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
