"""core/parity/inputs.py: codes in every accepted form and every bad input refused with one clear sentence."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.errors import AudioInputError, TokenFileError
from core.parity.inputs import load_codes, load_their_wav
from core.settings import Settings

LIMIT_S = 1800.0


def codes(frames=20, seed=0):
    return np.random.default_rng(seed).integers(0, 2048, (frames, 16))


def test_npy_json_and_their_shapes(tmp_path):
    c = codes()
    np.save(tmp_path / "a.npy", c)
    assert np.array_equal(load_codes(tmp_path / "a.npy", LIMIT_S).codes, c)
    np.save(tmp_path / "t.npy", c.T[None])  # a batch of one, codebooks first: how ports often save
    got = load_codes(tmp_path / "t.npy", LIMIT_S)
    assert np.array_equal(got.codes, c) and [n.code for n in got.notes] == ["codes_batch", "codes_transposed"]
    (tmp_path / "a.json").write_text(json.dumps({"audio_codes": c.tolist()}))
    assert np.array_equal(load_codes(tmp_path / "a.json", LIMIT_S).codes, c)
    (tmp_path / "f.json").write_text(json.dumps(c.astype(float).tolist()))
    assert np.array_equal(load_codes(tmp_path / "f.json", LIMIT_S).codes, c)


@pytest.mark.parametrize(
    ("array", "says"),
    [
        (np.full((10, 16), 2048), "holds values 2048..2048; codes are 0..2047"),
        (np.concatenate([codes(5), np.full((3, 16), -1)]), "contains -1 from frame 5 on: that is the padding value"),
        (np.zeros((10, 8), dtype=np.int64), "has shape (10, 8); codes must be frames × 16"),
        (np.zeros((0, 16), dtype=np.int64), "holds no frames"),
        (np.full((4, 16), 1.5), "numbers that are not whole"),
    ],
)
def test_bad_codes_are_one_clear_sentence(tmp_path, array, says):
    np.save(tmp_path / "bad.npy", array)
    with pytest.raises(TokenFileError, match=None) as e:
        load_codes(tmp_path / "bad.npy", LIMIT_S)
    assert says in str(e.value)


def test_codes_over_the_duration_limit_are_refused_from_the_header(tmp_path):
    path = tmp_path / "long.npy"
    big = np.lib.format.open_memmap(path, mode="w+", dtype=np.int16, shape=(30_000, 16))  # 40 min of frames
    del big
    with pytest.raises(TokenFileError, match=r"more than 30.0 min of codes"):
        load_codes(path, LIMIT_S)


def test_other_files_are_refused(tmp_path):
    (tmp_path / "x.txt").write_text("1 2 3")
    with pytest.raises(TokenFileError, match=r"\.npz.*\.npy.*\.json"):
        load_codes(tmp_path / "x.txt", LIMIT_S)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(TokenFileError, match="not valid JSON"):
        load_codes(tmp_path / "bad.json", LIMIT_S)


@pytest.fixture
def twenty(tmp_path):
    np.save(tmp_path / "c.npy", codes(20))
    return load_codes(tmp_path / "c.npy", LIMIT_S)


def test_a_wav_at_another_rate_is_resampled_and_said(tmp_path, twenty):
    x = np.sin(np.arange(20 * SAMPLES_PER_FRAME * 2) * 0.01).astype(np.float32) * 0.3
    sf.write(tmp_path / "48k.wav", x, 2 * SAMPLE_RATE)
    their = load_their_wav(tmp_path / "48k.wav", Settings().audio_limits(), twenty)
    assert their.resampled and their.samples.size == 20 * SAMPLES_PER_FRAME
    assert [n.code for n in their.notes] == ["wav_resampled"] and "48000 Hz" in their.notes[0].english()


def test_stereo_is_said(tmp_path, twenty):
    x = np.random.default_rng(0).normal(0, 0.1, (20 * SAMPLES_PER_FRAME, 2)).astype(np.float32)
    sf.write(tmp_path / "st.wav", x, SAMPLE_RATE, subtype="FLOAT")
    their = load_their_wav(tmp_path / "st.wav", Settings().audio_limits(), twenty)
    assert their.notes[0].code == "wav_channels_differ"
    np.testing.assert_allclose(their.samples, x.mean(axis=1), atol=1e-7)
    sf.write(tmp_path / "same.wav", np.stack([x[:, 0], x[:, 0]], axis=1), SAMPLE_RATE, subtype="FLOAT")
    same = load_their_wav(tmp_path / "same.wav", Settings().audio_limits(), twenty)
    assert same.notes[0].code == "wav_channels_same" and np.array_equal(same.samples, x[:, 0])


@pytest.mark.parametrize("seconds", [0.3, 9.0])
def test_a_wav_far_shorter_or_longer_than_the_codes_is_refused(tmp_path, twenty, seconds):
    sf.write(tmp_path / "w.wav", np.zeros(int(seconds * SAMPLE_RATE), np.float32), SAMPLE_RATE)
    with pytest.raises(
        AudioInputError, match=r"but the codes \(20 frames\) decode to 1.60 s: it was not made from these codes"
    ):
        load_their_wav(tmp_path / "w.wav", Settings().audio_limits(), twenty)


def test_a_wav_over_the_limits_is_refused_before_reading(tmp_path, twenty):
    sf.write(tmp_path / "w.wav", np.zeros(3 * SAMPLE_RATE, np.float32), SAMPLE_RATE)
    with pytest.raises(AudioInputError, match="over the 0.00 MiB limit|over the 0 MiB limit"):
        load_their_wav(tmp_path / "w.wav", Settings(max_file_mb=0.001).audio_limits(), twenty)
    with pytest.raises(AudioInputError, match="over the"):
        load_their_wav(tmp_path / "w.wav", Settings(max_duration_s=2.0).audio_limits(), twenty)
    (tmp_path / "junk.wav").write_bytes(b"not a wav at all" * 10)
    with pytest.raises(AudioInputError, match="is not a WAV"):
        load_their_wav(tmp_path / "junk.wav", Settings().audio_limits(), twenty)


def _npy_with_header(path, header: str, data: bytes) -> None:
    """A version 1.0 .npy whose header says ``header`` over ``data``: what a crafted or damaged file holds."""
    text = header.encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data)


@pytest.mark.parametrize(
    "header",
    [
        "{'descr': '<i8', 'fortran_order': False, 'shape': (20, 16), }",  # more values than the file holds
        "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 16), }",  # fewer: bytes left over
        "{'descr': '<i2', 'fortran_order': False, 'shape': (20, 16), }",  # another type than the bytes are
        "{'descr': '<i8', 'fortran_order': False, 'shape': (-20, 16), }",  # a shape no array has
    ],
)
def test_a_npy_whose_header_lies_is_one_sentence(tmp_path, header):
    _npy_with_header(tmp_path / "lie.npy", header, codes(10).astype("<i8").tobytes())
    with pytest.raises(TokenFileError, match="lie.npy") as refused:
        load_codes(tmp_path / "lie.npy", LIMIT_S)
    assert "Traceback" not in str(refused.value) and "numpy.save" in str(refused.value)


def test_json_codes_100000_deep_are_one_sentence(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TokenFileError, match="deep.json"):
        load_codes(tmp_path / "deep.json", LIMIT_S)


def test_their_wav_far_over_full_scale_is_refused_by_the_peak_rule(tmp_path, twenty):
    """3.4e38 gave "inf LSB", "SNR -790 dB" and Infinity in --json: the peak rule of every way in."""
    x = np.zeros(20 * SAMPLES_PER_FRAME, np.float32)
    x[100] = 3.4e38
    sf.write(tmp_path / "loud.wav", x, SAMPLE_RATE, subtype="FLOAT")
    with pytest.raises(AudioInputError, match=r"far over full scale.*\+60 dBFS limit"):
        load_their_wav(tmp_path / "loud.wav", Settings().audio_limits(), twenty)
    x[100] = 0.9  # at full scale: compared as before
    sf.write(tmp_path / "fine.wav", x, SAMPLE_RATE, subtype="FLOAT")
    assert load_their_wav(tmp_path / "fine.wav", Settings().audio_limits(), twenty).samples.size == x.size
