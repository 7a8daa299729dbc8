"""Does pocketsphinx's dWER separate a 3.5 kHz low-pass from the original? (docs/judging.md, dWER)

    python bench/voice_dwer.py

For the alsa-utils recording and espeak-ng en-us+m3 (three sentences at 130 words/min): dWER against
the original's transcript for near-transparent versions (7 kHz low-pass, MP3 32 kbit/s, noise at
-60 dB) and for the 3.5 kHz low-pass and the AMR phone call. Prints one line per clip and the
transcripts; bench/results/voice_dwer.md has a run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from core.analysis import (
    asr,  # noqa: E402
    dwer,  # noqa: E402
)
from core.anchors import BY_ID  # noqa: E402
from core.anchors.make import make_one  # noqa: E402
from tests.core.analysis import voices  # noqa: E402


def run(ps, rng, name, x):
    others = {aid: make_one(x, BY_ID[aid]).samples for aid in ("lp7", "mp3", "lp3.5", "amr")}
    others["noise-60dB"] = x + 0.0005 * rng.standard_normal(x.size).astype(np.float32)
    r = dwer.dwer(x, others, 24000, ps, "en")
    print(
        name,
        f"{r.seconds:.1f}s for {x.size / 24000:.1f}s x6",
        {k: None if v is None else round(v, 2) for k, v in r.values.items()},
        flush=True,
    )
    print("   ", r.transcripts, flush=True)


def main() -> int:
    ps, rng = asr.recogniser().load(), np.random.default_rng(0)
    run(ps, rng, "alsa", voices.recorded_sentence())
    for v in voices.VOICES[:1]:
        run(ps, rng, v, np.concatenate([voices.espeak(s, v, 130) for s in voices.SENTENCES]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
