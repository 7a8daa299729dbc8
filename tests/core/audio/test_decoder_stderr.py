"""Issue 29, item 10: libsndfile's mpg123 printed "Xing stream size off by more than 1%" straight to
the server's stderr when it opened an MP3 whose Xing header's size is off. The line is caught and
logged in words; other lines written to stderr meanwhile still reach it."""

from __future__ import annotations

import logging
import os

import pytest

from core.audio import readers
from core.audio.files import load_audio
from core.errors import AudioInputError
from tests.conftest import speechlike, write_mp3


def test_the_xing_warning_is_logged_in_words_not_printed(tmp_path, capfd, caplog):
    mp3 = write_mp3(tmp_path / "padded.mp3", speechlike(3.0))
    data = mp3.read_bytes()
    mp3.write_bytes(data + data[len(data) // 2 :])  # the Xing header's byte count is now 30% off
    with caplog.at_level(logging.INFO, logger="core.audio.readers"):
        try:
            load_audio(mp3)
        except AudioInputError:
            pass  # the length check refuses it: what matters here is what was printed
    printed = capfd.readouterr().err
    assert "Xing stream size" not in printed, printed
    assert any("padded.mp3" in r.getMessage() and "Xing/Info header" in r.getMessage() for r in caplog.records)


def test_other_lines_on_stderr_pass_through(capfd):
    with readers.decoder_stderr("x.wav"):
        os.write(2, b"someone else's line\n")
    assert capfd.readouterr().err == "someone else's line\n"


@pytest.mark.parametrize("text", ["", "Warning: Xing stream size off by more than 1%, fuzzy seeking!\n"])
def test_nothing_raw_is_left_over(capfd, text):
    with readers.decoder_stderr("x.mp3"):
        os.write(2, text.encode())
    assert capfd.readouterr().err == ""
