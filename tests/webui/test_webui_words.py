"""Sentences core/ makes, said in the page's language (webui.views.words), fed with core's real
sentences: input warnings, metric notes, readiness details, memory estimates, the errors people
meet most. Chinese comes out with no English sentence left; English as core wrote it; never an errno."""

from __future__ import annotations

import re

import numpy as np
import pytest
import soundfile as sf

from core.analysis import metrics
from core.audio.files import load_audio
from core.errors import AudioInputError
from core.settings import Settings
from tests.webui.english import english_sentences
from webui.views import formatting, words
from webui.views.words import codec_error_text

RATE = 24_000


def test_the_detector_finds_english_and_spares_names():
    assert (
        english_sentences("结论：编解码器 Opus 6 kbit/s，PESQ-WB 1.2 dB，speech_male_24k.wav，/tmp/tiny-ckpt，qwen-tts")
        == []
    )
    assert english_sentences("接近原始音频 close to the original") == ["close to the original"]


def _zh_clean(english: str) -> str:
    chinese = words.sentence(english, "zh-CN")
    assert english_sentences(chinese) == [], (english, chinese)
    assert words.sentence(english, "en") == english
    return chinese


def test_input_warnings_of_a_real_file(tmp_path, speech):
    stereo = np.stack([speech(1.0), speech(1.0, seed=1)], axis=1) * 2.5  # clipped, stereo, 48 kHz
    path = tmp_path / "loud stereo.wav"
    sf.write(path, np.repeat(stereo, 2, axis=0), 2 * RATE, subtype="FLOAT")
    facts = load_audio(path).facts
    assert len(facts.warnings) >= 3
    for warning in facts.warnings:
        _zh_clean(warning)
    quiet = tmp_path / "quiet.wav"
    sf.write(quiet, speech(1.0) * 1e-4, RATE)
    (silent_warning,) = load_audio(quiet).facts.warnings
    assert "几乎是静音" in _zh_clean(silent_warning)


def test_metric_notes_of_real_clips(speech):
    notes = [m.note for m in metrics.compare(speech(0.2), speech(0.2, seed=3)) if m.note]
    notes += [m.note for m in metrics.compare(np.zeros(RATE, np.float32), speech(1.0)) if m.note]
    assert len(notes) >= 4
    for note in notes:
        _zh_clean(note)


def test_readiness_details_and_the_memory_estimate(engine):
    for step in engine.last_report.to_dict()["steps"]:
        detail = words.step_detail(step, "zh-CN")
        assert english_sentences(detail) == [], detail
    figures = {
        "seconds": "7.2",
        "need": "0.02",
        "available": "16.00",
        "where_key": "words.ram",
        "fits_key": "words.fits",
    }
    estimate = words.estimate(figures | {"operation": "roundtrip"}, "zh-CN")
    assert "可以容纳" in estimate and english_sentences(estimate) == []
    status = formatting.status_html(engine.last_report.to_dict(), engine.info(), "zh-CN")
    shown = re.sub(r"<[^>]+>", " ", status).replace(str(engine.info().get("model_path")), "")
    assert english_sentences(shown) == [], shown


@pytest.mark.parametrize(("name", "content"), [("empty.wav", b""), ("notes.mp3", b"not audio at all\n" * 40)])
def test_errors_people_meet_are_in_chinese_and_carry_no_errno(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(AudioInputError) as caught:
        load_audio(path, Settings().audio_limits())
    chinese = codec_error_text(caught.value, "zh-CN")
    assert path.name in chinese and english_sentences(chinese.replace(path.name, "")) == [], chinese
    assert "Errno" not in chinese and "Errno" not in codec_error_text(caught.value, "en")


def test_a_clip_over_the_length_limit(tmp_path, speech):
    path = tmp_path / "long.wav"
    sf.write(path, speech(3.0), RATE)
    with pytest.raises(AudioInputError) as caught:
        load_audio(path, Settings(max_duration_s=1.0).audio_limits())
    assert "超过了" in _zh_clean(str(caught.value))
