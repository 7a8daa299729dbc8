"""Real speech made here for the judging tests and bench/voice_bench.py: espeak-ng voices (the
same words by different voices, different words by the same voice) and the recorded human voice of
Debian's alsa-utils (the test machines install both: make test-system-deps).

Every clip is float32 mono at 24 kHz (the codec's rate), peak-normalised to 0.5.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile
import soxr

RATE = 24_000
SENTENCES = (  # Harvard sentences (IEEE 1969), about 3 s each at espeak's default speed
    "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.",
    "It is easy to tell the depth of a well. These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls. The juice of lemons makes fine punch.",
)
VOICES = ("en-us+m3", "en-gb+f3", "en-us+f4", "en-gb-scotland+m1")  # two men, two women
ALSA_SOUNDS = Path("/usr/share/sounds/alsa")  # one real speaker saying each channel's name
ALSA_CLIPS = ("Front_Center", "Front_Left", "Front_Right", "Rear_Center", "Rear_Left", "Rear_Right")


def espeak(text: str, voice: str = VOICES[0], speed_wpm: int = 150) -> np.ndarray:
    """``text`` spoken by espeak-ng's ``voice``, at 24 kHz."""
    if shutil.which("espeak-ng") is None:
        raise RuntimeError("espeak-ng is missing: make test-system-deps installs it")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed_wpm), "-w", str(path), text], check=True)
        return _normalised(*soundfile.read(path, dtype="float32"))


def recorded(name: str = ALSA_CLIPS[0]) -> np.ndarray:
    """One of alsa-utils' recordings of a human voice ("Front center", ...), at 24 kHz."""
    path = ALSA_SOUNDS / f"{name}.wav"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: make test-system-deps installs alsa-utils")
    return _normalised(*soundfile.read(path, dtype="float32"))


def recorded_sentence() -> np.ndarray:
    """The alsa-utils recordings of one speaker after one another (about 8 s) with 0.3 s pauses."""
    gap = np.zeros(int(0.3 * RATE), np.float32)
    return np.concatenate([part for name in ALSA_CLIPS for part in (recorded(name), gap)])


def _normalised(x: np.ndarray, rate: int) -> np.ndarray:
    x = x.mean(axis=1) if x.ndim == 2 else x
    if rate != RATE:
        x = soxr.resample(x, rate, RATE)
    return (0.5 * x / max(float(np.abs(x).max()), 1e-9)).astype(np.float32)
