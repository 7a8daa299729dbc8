"""Issue 29, item 11: a Live recording's facts said "Resampled from 44100 Hz" and "Stereo downmixed"
as if the user had given the wrong file; the browser chose its capture rate and channels. The Live
result says so, in en and zh-CN, from core's real sentences; an uploaded file keeps core's words."""

from __future__ import annotations

import pytest

from core.audio.blocks import Source, _warnings
from webui.views import formatting


def _facts(rate: int, channels: int) -> dict:
    warnings = _warnings(Source("wav", rate, channels, None), clipped=0, rms_dbfs=-20.0)
    return {
        "name": "live.wav",
        "format": "wav",
        "sample_rate": rate,
        "channels": channels,
        "duration_s": 1.0,
        "peak": 0.5,
        "rms_dbfs": -20.0,
        "clipped_samples": 0,
        "warnings": list(warnings),
    }


@pytest.mark.parametrize(
    ("lang", "words"),
    [
        ("en", ("Your browser captured the microphone at 44100 Hz", "Your browser delivered")),
        ("zh-CN", ("浏览器以 44100 Hz 采集", "浏览器以立体声")),
    ],
)
def test_live_says_what_the_browser_chose(lang, words):
    live = formatting.facts_markdown(_facts(44_100, 2), lang, captured=True)
    for w in words:
        assert w in live, live
    assert "Resampled from" not in live and "downmixed" not in live


def test_an_upload_keeps_cores_words():
    upload = formatting.facts_markdown(_facts(44_100, 2), "en")
    assert "Resampled from 44100 Hz to 24000 Hz." in upload and "Stereo downmixed to mono." in upload
