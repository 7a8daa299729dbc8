"""Mouth to ear through the served Live tab, end to end: ``python -m webui`` as a user starts it (on the
CPU by default, the model from ``--checkpoint``), Debian's chromium on the same machine with a fake
microphone playing recorded speech, and the page's own split of the latency (codec wait, compute,
transport, playback, other, and the measured total from a packet's first sample being captured to its
audio leaving the page) read once a second while ``--seconds`` of speech go through.

    python -m bench.live_mouth_to_ear --checkpoint /tmp/full1 --seconds 30
    python -m bench.live_mouth_to_ear --checkpoint /tmp/full1 --decode-dtype bfloat16 --tag=-bf16

There is no official streaming path to run beside it (the official code re-decodes windows), so the
official offline round trip of the same clip is timed in the same run, before the server starts, for
scale. The server and the browser share this machine's cores, as on a laptop. Writes
``live_mouth_to_ear<tag>.json`` and ``.md`` under ``bench/results/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import soundfile as sf  # noqa: E402
import torch  # noqa: E402

from bench.harness import machine, official_decode, official_encode  # noqa: E402
from core.audio.files import load_audio, resample  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402

log = logging.getLogger(__name__)

CHROMIUM = "/usr/bin/chromium"
SPEECH = ROOT / "webui" / "assets" / "speech_male_24k.wav"  # 7 s of recorded speech; chromium loops it
PARTS = ("algorithmic_ms", "compute_ms", "transport_ms", "playback_ms", "other_ms", "total_ms")
READY_TIMEOUT_S = 300.0  # import, load and the readiness check of the full-size model on 2 cores


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def official_rtf(checkpoint: Path, x) -> dict:
    """The official offline encode + decode of ``x`` (after a 1 s warm-up) in this process, through the
    official ``Qwen3TTSTokenizer`` the engine wraps; the model is unloaded before the server starts."""
    from core.model.engine import Engine
    from core.model.torch_threads import in_passing_thread
    from core.settings import Settings

    engine = Engine(Settings(model=str(checkpoint), device="cpu", dtype="float32"))
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    tok = engine._tokenizer

    def timed():
        with torch.inference_mode():
            official_decode(tok, official_encode(tok, x[:SAMPLE_RATE]))
            t0 = time.perf_counter()
            codes = official_encode(tok, x)
            t1 = time.perf_counter()
            official_decode(tok, codes)
            return t0, t1, time.perf_counter()

    t0, t1, t2 = in_passing_thread(timed)
    engine.unload()
    seconds = x.size / SAMPLE_RATE
    return {"clip_s": seconds, "encode_s": t1 - t0, "decode_s": t2 - t1, "realtime_factor": (t2 - t0) / seconds}


def start_server(args, port: int, temp: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "webui", "--model", str(args.checkpoint), "--device", "cpu", "--port", str(port)]
    command += ["--temp-dir", str(temp), "--live-sessions", "1", "--live-packet-frames", str(args.packet_frames)]
    if args.decode_dtype:
        command += ["--decode-dtype", args.decode_dtype]
    log_file = open(temp.parent / "server.log", "w")  # noqa: SIM115 - the server's whole life
    server = subprocess.Popen(command, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited ({server.returncode}); see {temp.parent / 'server.log'}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(1.0)
    server.kill()
    raise SystemExit(f"the server was not ready within {READY_TIMEOUT_S:.0f} s")


def cpu_seconds(server_pid: int) -> dict:
    """CPU seconds so far of the server process and of every chromium process (the browser's share)."""
    import psutil

    out = {"server": 0.0, "chromium": 0.0}
    for proc in psutil.process_iter(["pid", "name", "cpu_times"]):
        times = proc.info["cpu_times"]
        if times is None:
            continue
        used = times.user + times.system
        if proc.info["pid"] == server_pid:
            out["server"] += used
        elif "chrom" in (proc.info["name"] or "").lower():
            out["chromium"] += used
    return out


def speak(url: str, mic: Path, seconds: float, settle_s: float, server_pid: int) -> dict:
    """Start the Live tab, sample its state once a second for ``seconds``, stop; the samples, the end, and
    the CPU the server and the browser used while it spoke (cores: CPU seconds per second)."""
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    args += ["--no-first-run", "--disable-sync", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
    args += [f"--use-file-for-fake-audio-capture={mic}", "--autoplay-policy=no-user-gesture-required"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        context = browser.new_context(viewport={"width": 1440, "height": 900}, permissions=["microphone"])
        page = context.new_page()
        page.goto(url)
        page.get_by_role("tab", name="Live").click()
        page.locator(".cw-live-start").wait_for(timeout=120_000)
        page.wait_for_timeout(1000 * settle_s)  # a person reads the page before pressing Start
        page.locator(".cw-live-start").click()
        started = time.monotonic()
        cpu_before = cpu_seconds(server_pid)
        page.wait_for_function("window.cwLive.state().frames >= 1", timeout=120_000)
        first_audio_s = time.monotonic() - started  # the click to the first packet's audio, as the page saw it
        samples = []
        while time.monotonic() - started < seconds:
            page.wait_for_timeout(1000)
            state = page.evaluate("window.cwLive.state()")
            samples.append({"t_s": time.monotonic() - started, **state})
            if not state["running"]:
                break
        cpu_after, spoke_s = cpu_seconds(server_pid), time.monotonic() - started
        cores = {k: (cpu_after[k] - cpu_before[k]) / spoke_s for k in cpu_before}
        if page.evaluate("window.cwLive.state().running"):  # else the server stopped it: the end says why
            page.locator(".cw-live-stop").click()
        page.wait_for_function("window.cwLive.state().resultId !== null || !window.cwLive.state().running")
        end = page.evaluate("window.cwLive.state()")
        end["status"] = page.locator(".cw-live-status").inner_text()
        label = page.locator(".cw-live-latency tr.lat_algorithmic th").inner_text()
        browser.close()
    return {"samples": samples, "end": end, "first_audio_s": first_audio_s, "codec_row_label": label, "cores": cores}


def summarize(run: dict, skip_s: float) -> dict:
    """Medians over the samples after the first ``skip_s`` (each sample: the page's medians of its last 50)."""
    steady = [s for s in run["samples"] if s["t_s"] >= skip_s and s["latency"]["total_ms"] is not None]
    out: dict = {"samples": len(steady)}
    for part in PARTS:
        values = [s["latency"][part] for s in steady if s["latency"][part] is not None]
        out[part] = statistics.median(values) if values else None
        out[part + "_max"] = max(values) if values else None
    last = run["samples"][-1] if run["samples"] else {}
    out["frames"] = last.get("frames")
    out["playback_queue_drops"] = run["end"].get("dropped")
    out["error"] = run["end"].get("error")
    out["status"] = run["end"].get("status")
    out["spoken_s"] = run["samples"][-1]["t_s"] if run["samples"] else 0.0
    out["note"] = run["end"].get("note")
    out["stayed_running"] = all(s["running"] for s in run["samples"])
    out["page_output_latency_ms"] = last.get("outputLatencyMs")
    return out


def markdown(result: dict) -> str:
    m, s, o = result["machine"], result["steady"], result["official"]
    ms = lambda v: "n/a" if v is None else f"{v:.0f}"  # noqa: E731
    lines = [
        "# Live mouth to ear, end to end (served page, fake microphone)",
        "",
        f"`{result['command']}`",
        "",
        f"{m.get('cpu', '')}, {os.cpu_count()} CPUs; server `python -m webui --device cpu` "
        f"(decode {result['decode_dtype']}, packets: {result['codec_row_label']!r}); headless chromium on the same "
        f"machine; load average {result['loadavg_before'][0]:.1f} before, {result['loadavg_after'][0]:.1f} after. "
        "Random weights say nothing about quality; latency does not depend on them in fp32.",
        "",
        f"Spoken: {result['seconds']:.0f} s; steady from {result['skip_s']:.0f} s; {s['samples']} samples of the "
        f"page's medians (each over its last 50 packets). First packet's audio {result['first_audio_s']:.2f} s after "
        f"Start (session open, microphone start, one packet). Session stayed running: {s['stayed_running']} "
        f"({s['spoken_s']:.0f} s; the page's last words: {s['status']!r}); "
        f"playback queue drops: {s['playback_queue_drops']}; error: {s['error']}. While it spoke the server used "
        f"{result['cores_used']['server']:.2f} cores and chromium {result['cores_used']['chromium']:.2f}.",
        "",
        "| part | median (ms) | worst sample (ms) |",
        "|---|---|---|",
    ]
    for part in PARTS:
        lines.append(f"| {part[:-3]} | {ms(s[part])} | {ms(s[part + '_max'])} |")
    lines += [
        "",
        f"Official offline round trip of a {o['clip_s']:.0f} s clip in the same run (before the server started): "
        f"encode {o['encode_s']:.2f} s + decode {o['decode_s']:.2f} s, real-time factor {o['realtime_factor']:.3f}.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--seconds", type=float, default=30.0, help="speaking time through the page")
    p.add_argument("--skip-s", type=float, default=8.0, help="samples before this are the start, not steady")
    p.add_argument("--settle-s", type=float, default=5.0, help="wait after the page loads before Start")
    p.add_argument("--packet-frames", type=int, default=0, help="--live-packet-frames of the server (0: auto)")
    p.add_argument("--decode-dtype", default=None, choices=[None, "float32", "bfloat16"])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--tag", default="", help="suffix of the result files (live_mouth_to_ear<tag>.md)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="mouth-to-ear-"))
    speech = load_audio(SPEECH).samples
    mic = work / "mic48k.wav"
    sf.write(mic, resample(speech, SAMPLE_RATE, 48_000), 48_000, subtype="PCM_16")
    result: dict = {"machine": machine("cpu"), "seconds": args.seconds, "skip_s": args.skip_s}
    result["command"] = "python -m bench.live_mouth_to_ear " + " ".join(argv if argv is not None else sys.argv[1:])
    result["decode_dtype"] = args.decode_dtype or "float32"
    result["official"] = official_rtf(args.checkpoint, speech)
    log.info("official: %s", result["official"])
    result["loadavg_before"] = os.getloadavg()
    port = free_port()
    server = start_server(args, port, work / "root")
    try:
        run = speak(f"http://127.0.0.1:{port}/", mic, args.seconds, args.settle_s, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)
    result["loadavg_after"] = os.getloadavg()
    result["first_audio_s"] = run["first_audio_s"]
    result["codec_row_label"] = run["codec_row_label"]
    result["cores_used"] = run["cores"]
    result["steady"] = summarize(run, args.skip_s)
    result["samples"] = [{"t_s": s["t_s"], "frames": s["frames"], "latency": s["latency"]} for s in run["samples"]]
    result["server_log_tail"] = (work / "server.log").read_text(errors="replace").splitlines()[-15:]
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"live_mouth_to_ear{args.tag}"
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{name}.md").write_text(markdown(result))
    log.info("steady: %s", result["steady"])
    return 0 if result["steady"]["stayed_running"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
