"""What the lab's player would fetch for a 10-minute result, float WAV against FLAC (issue 29, item 2).

    python -m bench.player_bytes            # 10 minutes of the recorded asset, looped

The player streams each source in 8 s blocks around the playhead (webui/static/player_audio.js), and
prefetches every source so that a flip is instant: a listener who hears the whole clip fetches every
source whole. This measures, per source, the bytes of the float32 WAV the page serves today and of
lossless FLAC of the same samples at 24 and 16 bits (FLAC stores integers: it is exact only for
samples on that grid, so "what is heard is what was measured" needs the measured PCM on the grid
first). Sources: the original (the asset, 16-bit at heart), a reconstruction stand-in (the original
through Opus 12 kbit/s: a real codec's float output), and their residual. Writes
``bench/results/player_bytes.json`` and ``.md``.
"""

from __future__ import annotations

import io
import json
import platform
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.anchors import make_anchors, parse_anchors  # noqa: E402
from core.audio.files import load_audio  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402

ASSET = ROOT / "webui" / "assets" / "speech_male_24k.wav"
MINUTES = 10.0


def _grid(x: np.ndarray, bits: int) -> np.ndarray:
    scale = 2.0 ** (bits - 1)
    return (np.round(np.clip(x, -1.0, 1.0 - 1.0 / scale) * scale) / scale).astype(np.float32)


def _flac_bytes(x: np.ndarray, bits: int) -> tuple[int, bool]:
    q = _grid(x, bits)
    buffer = io.BytesIO()
    sf.write(buffer, q, SAMPLE_RATE, format="FLAC", subtype="PCM_24" if bits > 16 else "PCM_16")
    buffer.seek(0)
    back, _ = sf.read(buffer, dtype="float32")
    return buffer.getbuffer().nbytes, bool(np.array_equal(back, q))


def main() -> int:
    clip = load_audio(ASSET).samples
    n = int(MINUTES * 60 * SAMPLE_RATE)
    original = np.tile(clip, n // clip.size + 1)[:n].astype(np.float32)
    made = make_anchors(original, parse_anchors("opus12"))
    stand_in = made.made[0].samples[:n].astype(np.float32)
    residual = original[: stand_in.size] - stand_in
    rows: list[dict] = []
    for name, x in (("original", original), ("reconstruction (Opus 12 stand-in)", stand_in), ("residual", residual)):
        wav = x.size * 4 + 44
        row: dict = {"source": name, "float_wav_bytes": wav}
        for bits in (24, 16):
            size, exact = _flac_bytes(x, bits)
            row[f"flac{bits}_bytes"], row[f"flac{bits}_exact"] = size, exact
            row[f"flac{bits}_ratio"] = round(wav / size, 2)
        rows.append(row)
    result = {"minutes": MINUTES, "python": platform.python_version(), "rows": rows}
    out = ROOT / "bench" / "results"
    (out / "player_bytes.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# What the player fetches for a 10-minute result: float WAV against FLAC",
        "",
        f"`python -m bench.player_bytes`: {MINUTES:g} minutes of `webui/assets/speech_male_24k.wav` looped; the "
        "reconstruction is a stand-in (Opus 12 kbit/s decoded: a real codec's float output; the tiny checkpoint's is "
        "noise). FLAC is lossless for samples on its grid: ratios are for the samples rounded to 24 or 16 bits.",
        "",
        "| source | float WAV | FLAC 24-bit (ratio) | FLAC 16-bit (ratio) |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['source']} | {r['float_wav_bytes'] / 1e6:.1f} MB | {r['flac24_bytes'] / 1e6:.1f} MB "
            f"({r['flac24_ratio']}×) | {r['flac16_bytes'] / 1e6:.1f} MB ({r['flac16_ratio']}×) |"
        )
    (out / "player_bytes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
