"""The judging models' check: each one the verdict uses loads and answers on this machine.

Today that is the speaker encoder behind SIM-GE2E (resemblyzer's GE2E, weights inside its wheel):
:func:`try_speaker_model` loads it and embeds a second of a synthetic vowel twice (the two must
agree: a model that answers noise would not); :func:`check_judging_models` judges what it saw.
"""

from __future__ import annotations

import time

import numpy as np

from core.doctor.findings import FAIL, PASS, Finding, finding

FIX = (
    "Install the judging models: .venv/bin/pip install -r requirements-judging.txt && "
    ".venv/bin/pip install --no-deps -r requirements-judging-nodeps.txt"
)


def try_speaker_model() -> tuple[str | None, float | None, str | None]:
    """(model label, self-similarity of a synthetic vowel, error) after loading GE2E on the CPU."""
    try:
        from core.analysis import speaker
        from core.analysis.speaker_models import GE2E, encoder

        started = time.perf_counter()
        ge2e = encoder(GE2E).load()
        t = np.arange(speaker.SIM_RATE * 2) / speaker.SIM_RATE
        vowel = 0.1 * np.sum([np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12)], axis=0).astype(np.float32)
        value = speaker.cosine(ge2e.embed(vowel), ge2e.embed(vowel.copy()))
        return f"{ge2e.label} in {time.perf_counter() - started:.2f} s", value, None
    except Exception as e:  # noqa: BLE001 - any failure to load or run is what this check reports
        return None, None, f"{type(e).__name__}: {e}"


def check_judging_models(label: str | None, value: float | None, error: str | None) -> Finding:
    """Pass when the speaker model loaded and gave one clip the same embedding twice."""
    name, title = "judging_models", "Judging models load (speaker similarity: GE2E)"
    if error is not None or label is None or value is None:
        return finding(name, title, FAIL, f"the GE2E speaker encoder did not load or run: {error}", FIX)
    if not value > 0.999:
        return finding(name, title, FAIL, f"{label}: one clip embedded twice gave {value:.4f}, not 1", FIX)
    return finding(name, title, PASS, f"{label}; one clip embedded twice: {value:.4f}", similarity=value)
