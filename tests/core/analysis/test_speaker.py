"""Speaker similarity (core.analysis.speaker, core.analysis.speaker_models) on real speech made here:
espeak-ng voices and the recorded human voice of alsa-utils (tests/core/analysis/voices.py).

The orderings below are the issue's (and docs/judging.md's thresholds rest on them): a clip with
itself >= 0.99; the same voice re-synthesised above two different voices; the 3.5 kHz low-pass and
the AMR phone call in between; the random-weight reconstruction lowest of all.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.analysis import speaker
from core.analysis.speaker_models import GE2E, build_random_wavlm, encoder, ge2e_mel
from core.errors import WeightsError
from tests.core.analysis import voices

RATE = voices.RATE


def test_windows_cover_a_short_clip_whole_and_bound_a_long_one():
    assert speaker.window_spans(10 * RATE, RATE) == [(0, 10 * RATE)]
    assert speaker.window_spans(32 * RATE, RATE) == [(0, 32 * RATE)]
    spans = speaker.window_spans(600 * RATE, RATE)  # 10 minutes
    assert len(spans) == speaker.MAX_WINDOWS
    assert spans[0][0] == 0 and spans[-1][1] == 600 * RATE
    assert all(end - start == speaker.WINDOW_S * RATE for start, end in spans)
    total = sum(end - start for start, end in speaker.window_spans(3 * 3600 * RATE, RATE))
    assert total == speaker.MAX_WINDOWS * speaker.WINDOW_S * RATE  # three hours: still 32 s


def test_voice_mask_finds_speech_and_leaves_silence_out():
    x = voices.espeak(voices.SENTENCES[0])
    clip = np.concatenate([np.zeros(2 * RATE, np.float32), x, np.zeros(2 * RATE, np.float32)])
    mask = speaker.voiced_mask(speaker.cut_windows(clip, [(0, clip.size)], RATE)[0])
    seconds = mask.size / speaker.SIM_RATE
    voiced = np.flatnonzero(mask) / speaker.SIM_RATE
    assert 1.5 < voiced[0] < 2.3, voiced[0]  # speech starts after the 2 s of silence
    assert seconds - 2.3 < voiced[-1] < seconds - 1.5, (voiced[-1], seconds)
    assert not speaker.voiced_mask(np.zeros(speaker.SIM_RATE * 2, np.float32)).any()


def test_silence_and_a_too_short_clip_get_no_number_and_say_why():
    ge2e = encoder(GE2E)
    silent = speaker.similarity(np.zeros(3 * RATE, np.float32), {"reconstruction": np.zeros(3 * RATE)}, RATE, ge2e)
    assert silent.values == {"reconstruction": None} and "needs at least" in silent.note
    short = voices.espeak("Hi.")[: int(0.2 * RATE)]
    score = speaker.similarity(short, {"reconstruction": short}, RATE, ge2e)
    assert score.values["reconstruction"] is None and "1 s of speech" in score.note


@pytest.mark.slow  # librosa's first melspectrogram takes seconds (numba)
def test_the_torch_mel_is_resemblyzers_own():
    from resemblyzer import audio

    x = voices.espeak(voices.SENTENCES[1])[: 3 * RATE]
    at16 = speaker.cut_windows(x, [(0, x.size)], RATE)[0]
    ours, theirs = ge2e_mel(at16), audio.wav_to_mel_spectrogram(at16)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5 * float(theirs.max()))


@pytest.fixture(scope="module")
def ge2e():
    return encoder(GE2E).load()


@pytest.fixture(scope="module")
def clips():
    """The first sentence by each voice, and the same voice's first sentence spoken slower."""
    said = {voice: voices.espeak(voices.SENTENCES[0], voice) for voice in voices.VOICES}
    again = {voice: voices.espeak(voices.SENTENCES[0], voice, speed_wpm=120) for voice in voices.VOICES}
    return said, again


def _between(low: float, value: float, high: float) -> bool:
    return low < value < high


@pytest.mark.slow  # a few seconds of GE2E and two anchors per voice
def test_same_clip_resynthesis_anchors_other_voices_random_codec_in_that_order(ge2e, clips, tiny_engine):
    from core.anchors import BY_ID
    from core.anchors.make import make_one
    from core.audio.files import audio_from_array

    said, again = clips
    man, woman = "en-us+m3", "en-us+f4"  # two voices a listener tells apart at once
    x = said[man]
    reconstruction = tiny_engine.roundtrip(audio_from_array(x, RATE)).decoded.samples
    sources = {
        "itself": x,
        "lp3.5": make_one(x, BY_ID["lp3.5"]).samples,
        "amr": make_one(x, BY_ID["amr"]).samples,
        "reconstruction": reconstruction,
    }
    aligned = speaker.similarity(x, sources, RATE, ge2e).values
    own = speaker.embedding(x, RATE, ge2e)
    resynthesised = speaker.cosine(own, speaker.embedding(again[man], RATE, ge2e))
    other_voice = speaker.cosine(own, speaker.embedding(said[woman], RATE, ge2e))
    assert aligned["itself"] >= 0.99
    assert resynthesised > other_voice + 0.2, (resynthesised, other_voice)
    assert _between(other_voice, aligned["lp3.5"], resynthesised), aligned
    assert _between(other_voice, aligned["amr"], resynthesised), aligned
    assert aligned["reconstruction"] < min(other_voice, aligned["lp3.5"], aligned["amr"]), aligned


@pytest.mark.slow
def test_a_recorded_human_voice_is_itself_and_no_espeak_voice(ge2e, clips):
    recording = voices.recorded_sentence()
    assert speaker.similarity(recording, {"itself": recording}, RATE, ge2e).values["itself"] >= 0.99
    own = speaker.embedding(recording, RATE, ge2e)
    for voice, clip in clips[0].items():
        assert speaker.cosine(own, speaker.embedding(clip, RATE, ge2e)) < 0.7, voice


@pytest.mark.slow
def test_a_source_that_cannot_be_embedded_leaves_the_others(ge2e, clips):
    x = clips[0]["en-us+m3"]
    broken = x.copy()
    broken[100] = np.nan
    score = speaker.similarity(x, {"good": x, "broken": broken, "short": x[: RATE // 2]}, RATE, ge2e)
    assert score.values["good"] >= 0.99
    assert score.values["broken"] is None and "NaN" in score.notes["broken"]
    assert score.values["short"] is None and "too short" in score.notes["short"]
    assert score.model.startswith("GE2E (resemblyzer ")


def test_a_long_clip_is_judged_on_bounded_windows(ge2e):
    x = np.tile(voices.espeak(voices.SENTENCES[2]), 20)  # about a minute
    score = speaker.similarity(x, {"itself": x}, RATE, ge2e, max_windows=2)
    assert len(score.windows) == 2 and score.windows[-1][1] == pytest.approx(x.size / RATE, abs=0.01)
    assert score.speech_s <= 2 * speaker.WINDOW_S
    assert "2 windows" in score.note and score.values["itself"] >= 0.99


@pytest.mark.slow  # builds a WavLM model and loads it through transformers
def test_a_wavlm_model_built_from_its_config_loads_through_the_real_path_and_gives_a_number(tmp_path):
    path = build_random_wavlm(tmp_path / "wavlm")
    wavlm = encoder(str(path)).load()
    assert "random weights" in wavlm.label and wavlm.label.startswith("WavLM x-vector")
    x = voices.espeak(voices.SENTENCES[0])
    score = speaker.similarity(x, {"itself": x, "lp3.5": x[::-1].copy()}, RATE, wavlm)
    assert score.metric == "wavlm" and score.model == wavlm.label  # never labelled GE2E
    assert score.values["itself"] == pytest.approx(1.0, abs=1e-6)
    assert isinstance(score.values["lp3.5"], float)  # a number; random weights say nothing about it


@pytest.mark.slow
def test_a_partial_or_foreign_speaker_checkpoint_fails_loudly(tmp_path):
    from safetensors.torch import load_file, save_file

    path = build_random_wavlm(tmp_path / "partial")
    tensors = load_file(path / "model.safetensors")
    dropped = sorted(k for k in tensors if "tdnn" in k)[0]
    save_file({k: v for k, v in tensors.items() if k != dropped}, path / "model.safetensors", {"format": "pt"})
    with pytest.raises(WeightsError, match="incomplete"):
        encoder(str(path)).load()
    foreign = build_random_wavlm(tmp_path / "foreign")
    config = json.loads((foreign / "config.json").read_text())
    (foreign / "config.json").write_text(json.dumps(config | {"architectures": ["WavLMForCTC"]}))
    with pytest.raises(WeightsError, match="not a WavLMForXVector"):
        encoder(str(foreign)).load()
    with pytest.raises(WeightsError, match="huggingface-cli download"):
        encoder(str(tmp_path / "nowhere")).load()


def test_speaker_similarity_is_a_row_of_the_catalogue_that_compare_and_the_verdict_read():
    from core.analysis import catalog
    from core.analysis.metrics import compare
    from core.judging import verdict

    x = voices.espeak(voices.SENTENCES[0])
    noisy = x + 0.3 * np.random.default_rng(0).standard_normal(x.size).astype(np.float32)
    got = {m.name: m for m in compare(x, x)}
    assert got["SIM-GE2E"].value >= 0.99 and got["SIM-GE2E"].note.startswith("GE2E (resemblyzer ")
    worse = {m.name: m for m in compare(x, noisy)}["SIM-GE2E"].value
    assert worse < got["SIM-GE2E"].value - 0.05
    assert catalog.BY_ID["SIM-GE2E"].votes and "WavLM" in catalog.BY_ID["SIM-GE2E"].meaning  # says it is not WavLM
    judged = verdict.combine({"SIM-GE2E": got["SIM-GE2E"].value}, None, None, False)
    assert judged.lights["SIM-GE2E"] == "green"
    assert verdict.combine({"SIM-GE2E": 0.7}, None, None, False).lights["SIM-GE2E"] == "red"


@pytest.mark.slow  # builds a WavLM and a Whisper model and loads them through transformers
def test_the_models_chosen_by_flags_make_their_own_rows_labelled_with_the_model(tmp_path):
    import argparse

    from core import options
    from core.analysis import asr, catalog
    from core.analysis.judges import Judges
    from core.analysis.metrics import compare
    from core.settings import Settings, settings_from_args

    wavlm, whisper = build_random_wavlm(tmp_path / "wavlm"), asr.build_random_whisper(tmp_path / "whisper")
    parser = argparse.ArgumentParser()
    options.add_arguments(parser, Settings)
    flags = ["--speaker-model", str(wavlm), "--asr", str(whisper), "--asr-language", "en", "--device", "cpu"]
    judges = Judges.of(settings_from_args(parser.parse_args(flags), env={}))
    assert (judges.speaker, judges.asr, judges.language) == (str(wavlm), str(whisper), "en")
    x = voices.espeak(voices.SENTENCES[0])
    got = {m.name: m for m in compare(x, x[::-1].copy(), judges=judges)}
    assert catalog.SIM_GE2E not in got  # one speaker model per run: WavLM's number never sits in GE2E's row
    assert isinstance(got[catalog.SIM_WAVLM].value, float) and "WavLM x-vector" in got[catalog.SIM_WAVLM].note
    assert "random weights" in got[catalog.SIM_WAVLM].note
    dwer = got["dWER-Whisper"]  # a random Whisper may hear too few words: then no number, and it says why
    assert "Whisper" in dwer.note and (dwer.value is not None or "dWER needs" in dwer.note), dwer
    chinese = {m.name: m for m in compare(x, x, judges=Judges(asr="pocketsphinx", language="zh"))}
    assert (
        chinese["dWER-pocketsphinx"].value is None
        and "not measured for this language" in chinese["dWER-pocketsphinx"].note
    )
