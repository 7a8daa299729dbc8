"""core/parity/encode_parity.py: another encoder's codes against the engine's encode of the same audio."""

from __future__ import annotations

import numpy as np
import pytest

from core.audio.files import write_wav
from core.parity import encode_parity
from tests.conftest import speechlike


def test_the_official_whole_clip_encode_agrees_and_a_changed_code_is_found(engine, whole_codes, tmp_path):
    x = speechlike(3.0, seed=11)
    wav = write_wav(tmp_path / "clip.wav", x)
    official = whole_codes(engine, x).numpy()  # the peer: qwen_tts model.encode on the whole clip
    np.save(tmp_path / "official.npy", official)
    same = encode_parity.check_encode(engine, wav, tmp_path / "official.npy")
    assert same.identical and same.agreement == [1.0] * 16, same.sentence
    assert same.sentence.startswith("Their codes equal the reference encode")
    changed = official.copy()
    changed[7, 2] = (changed[7, 2] + 1) % 2048
    np.save(tmp_path / "changed.npy", changed)
    out = encode_parity.check_encode(engine, wav, tmp_path / "changed.npy")
    assert not out.identical and out.first_difference_frame == 7 and out.first_difference_codebook == 3
    assert out.agreement[2] == pytest.approx(1 - 1 / official.shape[0], abs=1e-6) and out.agreement[0] == 1.0
    assert "differ from frame 7 (t = 0.56 s), first in codebook 3" in out.sentence


def test_a_missing_last_frame_and_unrelated_codes_are_named(engine, whole_codes, tmp_path):
    x = speechlike(3.0, seed=12)
    ours = whole_codes(engine, x).numpy()
    wav = write_wav(tmp_path / "clip.wav", x)
    np.save(tmp_path / "short.npy", ours[:-1])
    short = encode_parity.check_encode(engine, wav, tmp_path / "short.npy")
    assert "a missing last frame" in short.sentence
    np.save(tmp_path / "other.npy", np.random.default_rng(0).integers(0, 2048, ours.shape))
    other = encode_parity.check_encode(engine, wav, tmp_path / "other.npy")
    assert other.first_difference_frame == 0 and "look like codes of other audio" in other.sentence
