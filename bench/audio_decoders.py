"""How ``core.audio.files`` decodes compressed input (PyAV in-process) against the ffmpeg command line
(what the first release ran as a subprocess): same samples, and how long each takes.

    python -m bench.audio_decoders            # needs the ffmpeg command line to make the files

For every format the tests cover, a 2 s 44.1 kHz stereo tone is encoded with ffmpeg; each file is
then decoded (best of 3) by ``core.audio.readers.load_with_av`` and by ``ffmpeg -f f32le`` piped into
the same block collector, and the two mono 24 kHz results are compared sample by sample. Writes
``bench/results/audio_decoders.json``. Timings on a shared machine: compare the two columns, not runs.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.audio.blocks import Collector, Source, finish  # noqa: E402
from core.audio.readers import load_with_av  # noqa: E402
from core.settings import AudioLimits  # noqa: E402

RATE = 44_100  # Hz of the source tone
CASES = {  # extension -> ffmpeg codec options
    "mp3": ["-c:a", "libmp3lame", "-b:a", "128k"],
    "m4a": ["-c:a", "aac", "-b:a", "128k"],
    "webm": ["-c:a", "libopus", "-b:a", "96k"],
    "opus": ["-c:a", "libopus", "-b:a", "96k"],
    "ogg": ["-c:a", "libvorbis", "-q:a", "6"],
    "flac": ["-c:a", "flac"],
    "mka": ["-c:a", "flac"],
    "aiff": ["-c:a", "pcm_s16be"],
}


def ffmpeg_cli(path: Path, rate: int, channels: int):
    """The first release's way: ffmpeg decodes to float32 on a pipe, our collector takes blocks."""
    raw = subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-i",
            str(path),
            "-map",
            "0:a:0",
            "-f",
            "f32le",
            "-acodec",
            "pcm_f32le",
            "pipe:1",
        ],
        capture_output=True,
        check=True,
    ).stdout
    source = Source("cli", rate, channels, None)
    collector = Collector(path.name, source, AudioLimits())
    collector.add(np.frombuffer(raw, dtype="<f4").reshape(-1, channels))
    return finish(path.name, source, collector, AudioLimits())


def best_of(fn, repeats: int = 3):
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return out, best


def main() -> int:
    t = np.arange(2 * RATE) / RATE
    tone = (0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "src.wav"
        sf.write(src, np.stack([tone, 0.5 * tone], axis=1), RATE, subtype="FLOAT")
        for ext, codec in CASES.items():
            path = Path(folder) / f"in.{ext}"
            subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(src), *codec, str(path)], check=True)
            ours, ours_s = best_of(lambda: load_with_av(path, AudioLimits()))
            cli, cli_s = best_of(lambda: ffmpeg_cli(path, ours.facts.sample_rate, ours.facts.channels))
            n = min(ours.samples.size, cli.samples.size)
            rows.append(
                {
                    "format": ext,
                    "pyav_s": round(ours_s, 4),
                    "ffmpeg_cli_s": round(cli_s, 4),
                    "samples": [int(ours.samples.size), int(cli.samples.size)],
                    "max_abs_diff": float(np.abs(ours.samples[:n] - cli.samples[:n]).max()),
                }
            )
            print(
                f"{ext:5s} PyAV {ours_s * 1000:7.1f} ms  ffmpeg CLI {cli_s * 1000:7.1f} ms  "
                f"max |diff| {rows[-1]['max_abs_diff']:.1e}"
            )
    out = ROOT / "bench" / "results" / "audio_decoders.json"
    out.write_text(
        json.dumps({"machine": platform.machine(), "python": platform.python_version(), "rows": rows}, indent=2) + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
