"""The anchors on the real encoders PyAV carries (libopus, libmp3lame, libopencore_amrnb) and the real
filter: stated bitrates from the bytes, the low-pass's stop band, alignment, loudness matching,
and clips or builds they cannot take."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from core.anchors import ANCHORS, BY_ID, make_anchors, parse_anchors
from core.anchors.lowpass import lowpass
from core.anchors.make import MISSING, TOO_SHORT
from core.audio import loudness
from core.codec import SAMPLE_RATE
from core.errors import SettingsError

SPEECH = Path(__file__).resolve().parents[3] / "webui" / "assets" / "speech_male_24k.wav"  # 7.2 s of recorded speech
BITRATE_TOLERANCE = 0.10  # the bound
LOUDNESS_TOLERANCE_LU = 0.5


@pytest.fixture(scope="module")
def speech_clip() -> np.ndarray:
    samples, rate = sf.read(SPEECH, dtype="float32")
    assert rate == SAMPLE_RATE
    return samples


@pytest.fixture(scope="module")
def made(speech_clip):
    return make_anchors(speech_clip, ANCHORS)


def test_every_anchor_is_made_on_recorded_speech(made):
    assert [a.id for a in made.made] == [a.id for a in ANCHORS], made.problems
    assert made.problems == ()


@pytest.mark.parametrize("anchor_id", [a.id for a in ANCHORS if a.kind == "codec"])
def test_the_bitrate_from_the_encoded_bytes_is_the_stated_one(made, anchor_id):
    anchor = next(a for a in made.made if a.id == anchor_id)
    nominal = anchor.anchor.nominal_bps
    assert abs(anchor.bitrate_bps - nominal) <= BITRATE_TOLERANCE * nominal, (anchor.bitrate_bps, nominal)


def _energy_above(x: np.ndarray, hz: float) -> float:
    spectrum = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    return float(spectrum[np.fft.rfftfreq(x.size, 1 / SAMPLE_RATE) >= hz].sum())


def test_the_3_5_khz_anchor_keeps_nothing_above_4_khz():
    """White noise has two thirds of its energy above 4 kHz: what is left there is the filter's leak."""
    noise = np.random.default_rng(0).standard_normal(3 * SAMPLE_RATE).astype(np.float32) * 0.1
    out = make_anchors(noise, [BY_ID["lp3.5"]]).made[0].samples
    leak_db = 10 * np.log10(_energy_above(out, 4000) / _energy_above(noise, 4000))
    assert leak_db < -40, leak_db
    below = 10 * np.log10(
        (_energy_above(out, 0) - _energy_above(out, 3300)) / (_energy_above(noise, 0) - _energy_above(noise, 3300))
    )
    assert abs(below) < 0.1, below  # the pass band is left alone


def test_the_3_5_khz_anchor_on_speech(made, speech_clip):
    out = next(a for a in made.made if a.id == "lp3.5").samples
    assert 10 * np.log10(_energy_above(out, 4000) / _energy_above(speech_clip, 4000)) < -40


def test_the_low_pass_in_blocks_equals_one_convolution_over_the_whole_clip():
    from core.anchors.lowpass import FFT_SIZE, taps

    x = np.random.default_rng(1).standard_normal(3 * FFT_SIZE + 123).astype(np.float32)
    h = taps(3500.0)
    whole = np.convolve(x.astype(np.float64), h)[(h.size - 1) // 2 :][: x.size]
    assert np.max(np.abs(lowpass(x, 3500.0) - whole)) < 1e-5


def _lag(a: np.ndarray, b: np.ndarray, max_lag: int) -> int:
    """The shift of ``b`` against ``a`` (samples) that best lines them up."""
    n = 1 << (a.size + b.size).bit_length()  # a power of two: a fast FFT
    c = np.fft.irfft(np.fft.rfft(a, n) * np.conj(np.fft.rfft(b, n)), n)
    window = np.concatenate([c[-max_lag:], c[: max_lag + 1]])
    return int(np.argmax(window)) - max_lag


def test_every_anchor_is_sample_aligned_with_the_original_and_as_long(made, speech_clip):
    for anchor in made.made:
        assert anchor.samples.shape == speech_clip.shape, anchor.id
        assert anchor.samples.dtype == np.float32
        # within 0.125 ms: Opus's narrowband mode keeps a 2-sample group delay
        assert abs(_lag(speech_clip, anchor.samples, SAMPLE_RATE // 10)) <= 3, anchor.id


def test_loudness_matching_brings_every_anchor_to_the_original(made, speech_clip):
    reference = loudness.integrated_lufs(speech_clip)
    for anchor in made.made:
        gain_db = loudness.matching_gain_db(reference, loudness.integrated_lufs(anchor.samples))
        matched = loudness.integrated_lufs(anchor.samples * np.float32(10 ** (gain_db / 20)))
        assert abs(matched - reference) <= LOUDNESS_TOLERANCE_LU, (anchor.id, matched, reference)


def test_a_50_ms_clip_gives_a_message_for_each_codec_and_the_other_sources(speech_clip):
    clip = speech_clip[SAMPLE_RATE : SAMPLE_RATE + SAMPLE_RATE // 20]
    out = make_anchors(clip, ANCHORS)
    assert [a.id for a in out.made] == [a.id for a in ANCHORS if a.kind != "codec"] == ["lp3.5", "lp7"]
    assert all(a.samples.size == clip.size for a in out.made)
    assert {p.anchor.id for p in out.problems} == {a.id for a in ANCHORS if a.kind == "codec"} >= {"amr", "opus6"}
    for problem in out.problems:
        assert problem.reason == TOO_SHORT
        assert "at least 1 s" in problem.message and "0.05 s" in problem.message


def test_a_build_without_an_encoder_gives_a_message_and_the_other_sources(speech_clip):
    absent = dataclasses.replace(BY_ID["opus6"], id="opus6x", encoders=("libnotanencoder",))
    out = make_anchors(speech_clip[: 2 * SAMPLE_RATE], [absent, BY_ID["amr"]])
    assert [a.id for a in out.made] == ["amr"]
    (problem,) = out.problems
    assert problem.reason == MISSING
    assert "libnotanencoder" in problem.message and "--anchors" in problem.message


def test_parse_anchors_names_the_valid_ids():
    assert [a.id for a in parse_anchors("opus6, AMR")] == ["amr", "opus6"]  # the table's order
    assert [a.id for a in parse_anchors("phone lp35")] == ["lp3.5", "amr"]
    assert parse_anchors("none") == parse_anchors("") == ()
    assert parse_anchors("all") == ANCHORS
    with pytest.raises(SettingsError, match="opus6, opus12"):
        parse_anchors("opus7")
