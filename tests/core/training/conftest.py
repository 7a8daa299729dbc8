"""Fixtures of the fine-tuning tests: a folder of short speech clips cut from the repository's example
recordings (webui/assets: a synthetic male and female voice and a recorded human voice), and settings
small enough for a CPU run of seconds on the tiny checkpoint."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.codec import SAMPLE_RATE

ASSETS = Path(__file__).resolve().parents[3] / "webui" / "assets"
CLIP_S = 1.2  # seconds per clip cut from the examples


def speech_clips() -> list[np.ndarray]:
    """The example recordings at 24 kHz mono, cut into CLIP_S-second clips (the remainder dropped)."""
    from core.audio.files import load_audio

    clips = []
    for name in ("speech_male_24k.wav", "speech_female_16k_stereo.wav", "recorded_front_center_48k.wav"):
        samples = load_audio(ASSETS / name).samples
        size = int(CLIP_S * SAMPLE_RATE)
        clips += [samples[i : i + size] for i in range(0, samples.size - size + 1, size)]
    return clips


@pytest.fixture(scope="session")
def speech_folder(tmp_path_factory) -> Path:
    """A folder of WAV clips of speech (about a dozen, 1.2 s each)."""
    import soundfile

    folder = tmp_path_factory.mktemp("speech")
    for i, clip in enumerate(speech_clips()):
        soundfile.write(folder / f"clip{i:02d}.wav", clip, SAMPLE_RATE, subtype="PCM_16")
    return folder


@pytest.fixture(scope="session")
def small(tiny_checkpoint, speech_folder):
    """small(out, **changes) -> FinetuneSettings of a short CPU run on the tiny checkpoint (mel only)."""
    from core.training import FinetuneSettings

    def make(out: Path, **changes) -> FinetuneSettings:
        values = dict(
            data=speech_folder, out=out, model=str(tiny_checkpoint), steps=8, device="cpu", precision="fp32",
            batch_size=2, segment_s=0.64, learning_rate=1e-3, val_clips=2, adversarial=False, eval_every=0,
            save_every=0, seed=0,
        )  # fmt: skip
        values.update(changes)
        return FinetuneSettings(**values)

    return make
