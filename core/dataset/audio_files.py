"""Audio files named by path: a folder of audio and a fine-tuning JSONL manifest (the index half:
one :class:`Item` per file, relative manifest paths resolved against the manifest's folder), and
reading one such file in a decode task (the read half).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from pathlib import Path

from core.audio.blocks import Audio
from core.audio.readers import AUDIO_SUFFIXES
from core.dataset.rows import InputError, Inputs, Item, OutsideRoot, inside, path_row, printable, split
from core.errors import CodecError
from core.settings import AudioLimits
from core.units import MIB

logger = logging.getLogger(__name__)

NO_SUFFIX = "(none)"  # how files without an extension are counted among the skipped
HASH_BLOCK_BYTES = MIB  # bytes read at a time for a file's checksum


def read_folder(root: Path, data_root: Path | None = None) -> Inputs:
    """The audio files under ``root`` (recursive, sorted); a symlink that leads outside ``data_root``
    (default ``root``) is an error row, never read."""
    paths: list[Path] = []
    skipped: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            path = Path(dirpath) / name
            (paths if path.suffix.lower() in AUDIO_SUFFIXES and path.is_file() else skipped).append(path)
    paths.sort()
    skipped.sort()
    counts = Counter(p.suffix.lower() or NO_SUFFIX for p in skipped)
    if not paths:
        raise CodecError(
            f"{root} holds no audio files ({len(skipped)} other files; audio means {', '.join(AUDIO_SUFFIXES)}); "
            "check the folder."
        )
    if skipped:
        logger.info("skipping %d files that are not audio: %s", len(skipped), dict(counts))
    rows: list[Item | InputError] = []
    for i, p in enumerate(paths):
        key = printable(p.relative_to(root).as_posix())
        try:
            rows.append(Item(i, key, str(inside(data_root or root, root, str(p))), "{}"))
        except OutsideRoot as e:
            rows.append(InputError(i, key, str(e)))
    items, errors = split(rows)
    listed = tuple(printable(p.relative_to(root).as_posix()) for p in skipped)
    return Inputs("folder", items, errors, dict(sorted(counts.items())), listed)


def read_manifest(path: Path, audio_column: str, root: Path | None = None) -> Inputs:
    """A fine-tuning JSONL manifest: one row per line; paths relative to its folder, inside ``root``
    (default its folder)."""
    rows: list[Item | InputError] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for index, line in enumerate(f):
            if not line.strip():
                rows.append(InputError(index, f"line {index + 1}", "empty line; remove it."))
                continue
            try:
                rows.append(path_row(index, json.loads(line), path.parent, audio_column, root=root))
            except json.JSONDecodeError as e:
                rows.append(InputError(index, f"line {index + 1}", f"not valid JSON ({e.msg}); fix the line."))
    items, errors = split(rows)
    if not items:
        raise CodecError(f"{path} names no audio file; each line needs an {audio_column!r} field.")
    return Inputs("jsonl", items, errors)


def read_file(path: str, limits: AudioLimits) -> tuple[Audio, str]:
    """(audio, sha256 of the file's bytes) of one audio file named by path."""
    from core.audio.files import load_audio, load_audio_bytes

    if _utf8(path):
        return load_audio(path, limits), _file_sha256(path)
    data = read_bytes(path, limits)  # a name that is not UTF-8: libsndfile cannot open it; its bytes can be read
    name = Path(path).name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return load_audio_bytes(data, name, limits), hashlib.sha256(data).hexdigest()


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def read_bytes(path: Path | str, limits: AudioLimits) -> bytes:
    """A file's bytes, once ``stat()`` has shown a regular file within the size limit (a special file
    is refused with its kind; nothing is read past the limit)."""
    from core.audio.files import check_file

    return check_file(path, limits).read_bytes()


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(HASH_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()
