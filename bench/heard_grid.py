"""What rounding to 16-bit PCM does to each metric (the player is sent 16-bit FLAC,
so the page measures 16-bit PCM; webui/jobs/pcm16_copies.py).

    python -m bench.heard_grid                      # tiny random-weight checkpoint, built here
    python -m bench.heard_grid --full /path/to/ckpt # and a full-size random checkpoint

For each checkpoint, the round trip of 10 s of the recorded assets (24 kHz speech; the 16 kHz stereo
one, whose resampled original is off the grid) is measured with every metric of the catalogue
twice: on the float samples, and on both rounded to 16 bits. Random weights: the reconstructions
are noise, so the values say nothing about quality; what matters is the difference. Writes
``bench/results/heard_grid.json`` and ``.md``.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import table, write_results  # noqa: E402
from core.analysis import metrics  # noqa: E402
from core.audio.files import load_audio, on_grid  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402

ASSETS = ("speech_male_24k.wav", "speech_female_16k_stereo.wav")
SECONDS = 10.0


def _engine(path: Path):
    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(path), device="cpu"))
    engine.warm_up()
    return engine


def _row(checkpoint: str, asset: str, engine) -> list[dict]:
    from core.audio.files import audio_from_array

    clip = load_audio(ROOT / "webui" / "assets" / asset).samples
    x = np.tile(clip, int(SECONDS * SAMPLE_RATE) // clip.size + 1)[: int(SECONDS * SAMPLE_RATE)]
    y = engine.roundtrip(audio_from_array(x, SAMPLE_RATE)).decoded.samples
    floats = {m.name: m.value for m in metrics.compare(x, y)}
    grid = {m.name: m.value for m in metrics.compare(on_grid(x), on_grid(y))}
    rows = []
    for name, value in floats.items():
        other = grid.get(name)
        difference = None
        if value is not None and other is not None and math.isfinite(value) and math.isfinite(other):
            difference = other - value
        rows.append(
            {
                "checkpoint": checkpoint,
                "clip": asset,
                "metric": name,
                "float": value,
                "grid16": other,
                "difference": difference,
            }
        )
    return rows


def main() -> int:
    rows: list[dict] = []
    from core.model.checkpoints import build_tiny_checkpoint

    checkpoints = [("tiny random", build_tiny_checkpoint(Path(tempfile.mkdtemp()) / "tiny"))]
    if "--full" in sys.argv:
        checkpoints.append(("full-size random", Path(sys.argv[sys.argv.index("--full") + 1])))
    for name, path in checkpoints:
        engine = _engine(path)
        for asset in ASSETS:
            rows += _row(name, asset, engine)
    result = {"seconds": SECONDS, "load_average": os.getloadavg(), "rows": rows}

    def cell(v):
        return "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.4f}"

    lines = [
        "# Each metric on float samples and on 16-bit PCM (what the player is sent)",
        "",
        f"`python -m bench.heard_grid {' '.join(sys.argv[1:])}`: {SECONDS:g} s round trips on random-weight "
        "checkpoints (their output is noise: the values say nothing about quality, only the difference counts).",
        "",
        *table(
            ["checkpoint", "clip", "metric", "float", "16-bit", "difference"],
            (
                [r["checkpoint"], r["clip"], r["metric"], *map(cell, (r["float"], r["grid16"], r["difference"]))]
                for r in rows
            ),
            right=3,
        ),
    ]
    write_results(ROOT / "bench" / "results", "heard_grid", result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
