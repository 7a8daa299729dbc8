"""The audio files of a folder to evaluate, and a line for every entry left out: only regular files
inside the folder are read (a link out of it, a dangling link, a link to a folder, a FIFO or a device
such as ``/dev/zero`` is skipped, and said)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from core.audio.readers import AUDIO_SUFFIXES  # the one list of what the readers open
from core.errors import CodecError

logger = logging.getLogger(__name__)


def find_audio(directory: Path) -> list[Path]:
    """Audio files under ``directory`` (recursively, by suffix), sorted; every entry skipped is logged
    with why (:func:`scan_audio`)."""
    files, skipped = scan_audio(directory)
    for line in skipped:
        logger.warning("%s", line)
    return files


def scan_audio(directory: Path) -> tuple[list[Path], list[str]]:
    """(the regular audio files under ``directory``, recursively by suffix and sorted; a line for each
    entry skipped). Only what stays inside the folder is read: a link whose target is outside it, a
    dangling link, a link to a folder, and anything that is not a regular file (a FIFO, a device such
    as ``/dev/zero``) is skipped with a line saying so."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CodecError(f"{directory} is not a folder; give the folder that holds the audio files.")
    root = directory.resolve()
    files: list[Path] = []
    skipped: list[str] = []
    for folder, folders, names in os.walk(directory):
        for name in sorted(folders):
            if (Path(folder) / name).is_symlink():
                skipped.append(f"{Path(folder) / name}: a link to a folder, not followed (skipped)")
        for name in sorted(names):
            path = Path(folder) / name
            if path.suffix.lower() not in AUDIO_SUFFIXES:
                continue
            why = _why_skipped(path, root)
            if why:
                skipped.append(f"{path}: {why} (skipped)")
            else:
                files.append(path)
    return sorted(files), skipped


def _why_skipped(path: Path, root: Path) -> str:
    """Why ``path`` is not read ("" when it is a regular file inside ``root``)."""
    target = path.resolve()
    if path.is_symlink() and not path.exists():
        return f"a link to {os.readlink(path)}, which does not exist"
    if not target.is_relative_to(root):
        return f"a link to {target}, outside the folder being evaluated"
    mode = target.stat().st_mode
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a file"
        )
        return f"{kind}, not a regular file"
    return ""
