"""Gradio's own streaming audio as a Live transport, measured: an echo app (``gr.Audio`` microphone
with ``.stream(stream_every=...)`` into a streaming ``gr.Audio`` output, no codec at all) in Debian's
chromium with a fake microphone; writes ``live_transport.json``.

    python -m bench.live_transport --out bench/results

Mouth-to-ear of the echo: while the output plays, (seconds since the microphone started) minus (the
output player's position) is how long ago the sample now heard was spoken. The same measurement for
the Live tab's WebSocket path (with the codec in it) is in ``live_browser.json`` (the browser test).
If the output never plays within ``--seconds``, that is the result (``output_played`` false).
FastRTC is not measured: every release pins ``gradio<6`` and this project runs Gradio 6 (docs/live.md).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"


def echo_app(stream_every: float, calls: list):
    import gradio as gr

    with gr.Blocks() as demo:
        mic = gr.Audio(sources=["microphone"], streaming=True, elem_id="mic")
        out = gr.Audio(streaming=True, autoplay=True, elem_id="out")

        def echo(chunk):
            calls.append(time.monotonic())
            if chunk is None:
                return None
            rate, samples = chunk
            return rate, np.asarray(samples)

        mic.stream(echo, inputs=[mic], outputs=[out], stream_every=stream_every, time_limit=60)
    return demo


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(mic_wav: Path, stream_every: float, seconds: float) -> dict:
    from playwright.sync_api import sync_playwright

    calls: list[float] = []
    demo = echo_app(stream_every, calls)
    _app, url, _ = demo.launch(server_port=free_port(), prevent_thread_lock=True, quiet=True)
    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={mic_wav}",
        "--autoplay-policy=no-user-gesture-required",
    ]
    samples, first_play = [], None
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
            page = browser.new_context(permissions=["microphone"]).new_page()
            page.goto(url)
            page.locator("#mic button", has_text="Record").first.click(timeout=30_000)
            started = time.monotonic()
            while time.monotonic() - started < seconds:
                position = page.evaluate(
                    "(() => { const a = document.querySelector('#out audio'); return a && !a.paused ? a.currentTime : null; })()"
                )
                now = time.monotonic() - started
                if position is not None and position > 0:
                    first_play = first_play or now
                    samples.append(now - position)
                time.sleep(0.1)
            browser.close()
    finally:
        demo.close()
    late = samples[len(samples) // 3 :]  # after start-up
    gaps = np.diff(calls) if len(calls) > 1 else np.zeros(0)
    return {
        "stream_every_s": stream_every,
        "first_chunk_at_server_after_s": calls[0] - started if calls else None,
        "chunks_at_server": len(calls),
        "chunk_interval_ms_median": float(1000 * np.median(gaps)) if gaps.size else None,
        "output_played": bool(samples),
        "first_audio_after_s": first_play,
        "mouth_to_ear_ms_median": 1000 * statistics.median(late) if late else None,
        "mouth_to_ear_ms_min": 1000 * min(late) if late else None,
        "polls_playing": len(samples),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--stream-every", type=lambda s: [float(v) for v in s.split(",")], default=[0.1, 0.5])
    args = parser.parse_args(argv)
    import soundfile as sf

    from core.audio.files import load_audio, resample

    speech = load_audio(ROOT / "webui" / "assets" / "speech_male_24k.wav").samples
    mic = args.out / "mic48k.tmp.wav"
    args.out.mkdir(parents=True, exist_ok=True)
    sf.write(mic, resample(speech, 24_000, 48_000), 48_000, subtype="PCM_16")
    try:
        rows = [measure(mic, every, args.seconds) for every in args.stream_every]
    finally:
        mic.unlink()
    result = {"transport": "gradio streaming audio (echo, no codec)", "rows": rows, "loadavg": os.getloadavg()}
    (args.out / "live_transport.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
