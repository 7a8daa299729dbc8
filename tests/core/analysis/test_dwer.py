"""dWER (core.analysis.dwer) and its recognisers (core.analysis.asr): the counting, the languages an
ASR may be trusted with, and both ASRs loading through their real paths."""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis import dwer
from core.analysis.asr import POCKETSPHINX, build_random_whisper, recogniser
from tests.core.analysis import voices


def test_words_drop_punctuation_and_case_and_count_chinese_by_character():
    assert dwer.words("Front, CENTER! It's") == ["front", "center", "it's"]
    assert dwer.words("你好，世界") == ["你", "好", "世", "界"]


def test_edit_distance_counts_substitutions_deletions_insertions():
    assert dwer.edit_distance("a b c d".split(), "a x c".split()) == 2
    assert dwer.edit_distance([], "a b".split()) == 2
    assert dwer.error_rate("the cat sat", "the cat sat") == 0.0
    assert dwer.error_rate("the cat sat", "a dog sat down") == pytest.approx(3 / 3)


def test_an_english_asr_gives_no_number_for_chinese_or_an_unstated_language():
    asr = recogniser(POCKETSPHINX)
    x = voices.espeak(voices.SENTENCES[0])
    for language in ("zh-CN", None):
        score = dwer.dwer(x, {"reconstruction": x}, voices.RATE, asr, language)
        assert score.values == {"reconstruction": None}
        assert score.note.startswith(dwer.NOT_MEASURED) and score.transcripts == {}
    assert dwer.handles(asr, "en-US") and not dwer.handles(asr, "fr")


@pytest.mark.slow  # pocketsphinx decodes about as fast as real time here
def test_pocketsphinx_hears_the_recorded_voice_and_the_same_clip_scores_zero():
    asr = recogniser(POCKETSPHINX)
    x = voices.recorded_sentence()
    score = dwer.dwer(x, {"itself": x}, voices.RATE, asr, "en")
    assert "front" in score.transcripts["original"] and "left" in score.transcripts["original"]
    assert score.values["itself"] == 0.0 and score.model.startswith("pocketsphinx 5.1.1")


@pytest.mark.slow  # builds a Whisper model and loads it through transformers
def test_a_whisper_model_built_from_its_config_loads_through_the_real_path_and_gives_a_number(tmp_path):
    asr = recogniser(str(build_random_whisper(tmp_path / "whisper"))).load()
    assert "random weights" in asr.label and asr.languages == {"en", "zh"}
    x = voices.espeak(voices.SENTENCES[0])
    score = dwer.dwer(x, {"itself": x, "noise": np.zeros_like(x) + 0.01}, voices.RATE, asr, "en")
    assert isinstance(score.values["itself"], float) and score.model == asr.label
    assert dwer.dwer(x, {"itself": x}, voices.RATE, asr, "fr").note.startswith(dwer.NOT_MEASURED)
