"""Audio files named by path: a folder of audio and a fine-tuning JSONL manifest (the index half:
one :class:`Item` per file, relative manifest paths resolved against the manifest's folder), and
reading one such file in a decode task (the read half).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from core.audio.blocks import Audio
from core.audio.readers import AUDIO_SUFFIXES
from core.dataset.rows import (
    MAX_JSON_BYTES,
    InputError,
    Inputs,
    Item,
    JsonRefused,
    OutsideRoot,
    inside,
    parse_json,
    path_row,
    printable,
    split,
)
from core.errors import CodecError
from core.settings import AudioLimits
from core.units import MIB

logger = logging.getLogger(__name__)

NO_SUFFIX = "(none)"  # how files without an extension are counted among the skipped
HASH_BLOCK_BYTES = MIB  # bytes read at a time for a file's checksum


def read_folder(root: Path, data_root: Path | None = None, exclude: Path | None = None) -> Inputs:
    """The audio files under ``root`` (recursive, sorted); a symlink that leads outside ``data_root``
    (default ``root``) is an error row, never read. ``exclude``: a folder inside ``root`` not walked
    (the job's own output: a resumed run never counts its shards as input)."""
    paths: list[Path] = []
    skipped: list[Path] = []
    own = os.path.realpath(exclude) if exclude is not None else None
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if own is None or os.path.realpath(Path(dirpath) / d) != own)
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
    with open(path, "rb") as f:
        for index, line in enumerate(_lines(f)):
            where = f"line {index + 1}"
            if line is None:
                reason = f"the line is over {MAX_JSON_BYTES // MIB} MiB of JSON; keep large data in files of its own."
                rows.append(InputError(index, where, reason))
                continue
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                rows.append(InputError(index, where, "empty line; remove it."))
                continue
            try:
                row = parse_json(text, "the line")
            except JsonRefused as e:
                rows.append(InputError(index, where, str(e)))
                continue
            rows.append(path_row(index, row, path.parent, audio_column, root=root))
    items, errors = split(rows)
    if not items:
        raise CodecError(f"{path} names no audio file; each line needs an {audio_column!r} field.")
    return Inputs("jsonl", items, errors)


def _lines(f) -> Iterator[bytes | None]:
    """The file's lines, each read with a bound: a line over ``MAX_JSON_BYTES`` is None (the rest of it
    skipped in blocks), so one huge line never sits in memory."""
    while line := f.readline(MAX_JSON_BYTES + 1):
        if len(line) > MAX_JSON_BYTES:
            while line and not line.endswith(b"\n"):
                line = f.readline(MIB)
            yield None
            continue
        yield line


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
