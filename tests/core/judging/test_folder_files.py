"""``evaluate`` reads only regular audio files inside its folder and says why it leaves any entry out:
a FIFO, a link to ``/dev/zero``, a dangling link and a link to a file outside the folder were dropped
without a word, or opened (the FIFO blocked, ``/dev/zero`` never ended, ``/etc/passwd`` was read)."""

from __future__ import annotations

import os

import numpy as np
import soundfile as sf

from core.judging.folder_files import find_audio, scan_audio


def test_every_skipped_entry_has_a_line_and_nothing_outside_is_opened(tmp_path, caplog):
    folder = tmp_path / "clips"
    (folder / "sub").mkdir(parents=True)
    sf.write(folder / "sub" / "good.wav", np.zeros(2400, np.float32), 24_000)
    os.mkfifo(folder / "pipe.wav")
    (folder / "zero.wav").symlink_to("/dev/zero")
    (folder / "gone.wav").symlink_to(folder / "nothing-here.wav")
    (folder / "passwd.wav").symlink_to("/etc/passwd")
    outside = tmp_path / "elsewhere.wav"
    sf.write(outside, np.zeros(2400, np.float32), 24_000)
    (folder / "out.wav").symlink_to(outside)
    (folder / "inside.wav").symlink_to(folder / "sub" / "good.wav")  # a link that stays inside is read
    (folder / "linked").symlink_to(tmp_path)
    (folder / "notes.txt").write_text("not audio")

    files, skipped = scan_audio(folder)
    assert [p.name for p in files] == ["inside.wav", "good.wav"]
    said = "\n".join(skipped)
    assert len(skipped) == 6, said
    assert (
        "pipe.wav: a FIFO, not a regular file" in said and "zero.wav: a link to /dev/zero, outside the folder" in said
    )
    assert "gone.wav: a link to" in said and "does not exist" in said
    assert "passwd.wav: a link to /etc/passwd, outside the folder" in said
    assert "out.wav: a link to" in said and "linked: a link to a folder, not followed" in said
    assert all(line.endswith("(skipped)") for line in skipped)
    caplog.set_level("WARNING")
    assert len(find_audio(folder)) == 2 and "passwd.wav" in caplog.text  # the library's way: logged
