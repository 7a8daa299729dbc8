"""Audio far over full scale through the tabs' handlers (tiny checkpoint): refused on the
page, in the page's language."""

from __future__ import annotations

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.audio.files import audio_from_array
from tests.conftest import speechlike
from webui.views import words


def _loud_wav(path, peak: float):
    x = speechlike(1.2, 3, 16_000)
    sf.write(path, (x / np.abs(x).max() * peak).astype(np.float32), 16_000, subtype="FLOAT")
    return path


def test_a_wav_at_3_4e38_gets_a_clear_refusal_on_the_page_never_a_verdict(tabs, tmp_path):
    path = _loud_wav(tmp_path / "loud.wav", 3.4e38)
    with pytest.raises(gr.Error) as refused:
        tabs.event("roundtrip")(str(path))
    assert "far over full scale" in refused.value.message and "+60 dBFS" in refused.value.message


def test_the_refusal_and_the_warning_are_said_in_chinese():
    with pytest.raises(Exception) as refused:
        audio_from_array(np.full(2400, 3.4e38, np.float32), 24_000, "loud.wav")
    chinese = words.sentence(str(refused.value), "zh-CN")
    assert "远超满刻度" in chinese and "loud.wav" in chinese
    (warning,) = [w for w in audio_from_array(np.full(2400, 10.0, np.float32), 24_000).facts.warnings if "scale" in w]
    assert "超过满刻度" in words.sentence(warning, "zh-CN")
