"""The rows every tokenize input becomes (:mod:`core.dataset.inputs` reads the inputs;
:mod:`core.dataset.audio_files`, :mod:`core.dataset.parquet_arrow` and :mod:`core.dataset.webdataset` the table and tar layouts): an
:class:`Item` per row that names or holds audio, an :class:`InputError` per row that does not, and
:class:`Inputs` holding both with what was skipped or left out."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

AUDIO_FIELD = "audio"  # the fine-tuning format's audio path field (Qwen3-TTS finetuning/prepare_data.py)


@dataclass(frozen=True)
class Item:
    index: int  # position in the input; fixes the shard and the output order
    key: str  # what names the row: the audio field as given, the path in a folder, a tar sample's key
    path: str  # the file to read: the audio file, or the Parquet/Arrow/tar file that holds the audio
    extra: str  # the row's other fields, as a JSON object (kept as columns and in the --jsonl export)
    locator: str = ""  # JSON: where the audio sits inside ``path`` ("" for an audio file)
    source: str = ""  # the input file the row came from, as the user knows it (errors name it)


@dataclass(frozen=True)
class InputError:
    index: int  # position in the input (line number - 1 for JSONL)
    key: str  # what identifies the row to the user
    reason: str  # what is wrong and what to do
    source: str = ""  # the input file (shard) it came from


@dataclass(frozen=True)
class Inputs:
    kind: str  # "folder", "jsonl", "parquet", "webdataset" or "arrow"
    items: tuple[Item, ...]  # the rows that name or hold audio
    errors: tuple[InputError, ...]  # the rows that do not
    skipped: dict[str, int] = field(default_factory=dict)  # folder files that are not audio, by extension
    skipped_paths: tuple[str, ...] = ()  # those files (--list-skipped)
    left_out: dict[str, str] = field(default_factory=dict)  # columns / tar members not copied, and why

    @property
    def count(self) -> int:
        return len(self.items) + len(self.errors)

    def fingerprint(self) -> str:
        """sha256 over every row: a rerun resumes only onto the same input."""
        digest = hashlib.sha256()
        for item in self.items:
            text = f"{item.index}\0{item.key}\0{item.path}\0{item.locator}\0{item.extra}\n"
            digest.update(text.encode("utf-8", "surrogateescape"))
        for error in self.errors:
            digest.update(f"{error.index}\0{error.key}\0!\n".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()


def printable(text: str) -> str:
    """A name as it can be written to JSON and Parquet: bytes that were not UTF-8 (kept by the OS
    and tarfile as surrogate escapes) become ``\\xNN``; the file itself is still opened by its real name."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class OutsideRoot(ValueError):
    """A path a dataset names that resolves outside the dataset's root."""


def inside(root: Path, base: Path, value: str) -> Path:
    """The file a dataset names by ``value`` (relative to ``base``, the folder of the file that names
    it), resolved with its symlinks; it must lie inside ``root`` (the dataset's own folder, or the
    operator's ``--data-root``), or :class:`OutsideRoot` names the rule. Nothing is opened or
    stat'ed outside ``root``: a dataset cannot read, or learn of, the user's other files."""
    path = Path(value).expanduser()
    real = Path(os.path.realpath(path if path.is_absolute() else base / path))
    top = Path(os.path.realpath(root))
    if not real.is_relative_to(top):
        raise OutsideRoot(
            f"'{printable(value)}' lies outside {printable(str(top))}: a dataset may only name files inside its "
            "own folder (a downloaded table could otherwise read your other files); move the file there, or "
            "give --data-root with a folder that holds it."
        )
    return real


def path_row(
    index: int, row, base: Path, audio_column: str, source: str = "", root: Path | None = None
) -> Item | InputError:
    """A manifest row (JSONL line, Parquet row) whose audio field is a file path: relative to ``base``
    (the manifest's or table's folder, as people write them), inside ``root`` (default ``base``)."""
    if not isinstance(row, dict):
        return InputError(index, f"row {index + 1}", "the row is not a JSON object; write one object per line.", source)
    value = row.get(audio_column)
    if not isinstance(value, str) or not value.strip():
        return InputError(
            index,
            f"row {index + 1}",
            f"no {audio_column!r} field with a file path; add it (the fine-tuning format's audio path).",
            source,
        )
    if "://" in value or value.startswith("data:"):
        return InputError(index, value, "URLs are not read by batch jobs; download the file and give its path.", source)
    try:
        path = inside(root or base, base, value)
    except OutsideRoot as e:
        return InputError(index, printable(value), str(e), source)
    extra = {k: v for k, v in row.items() if k != audio_column}
    return Item(index, value, str(path), to_json(extra), "", source)


def to_json(fields: dict) -> str:
    """The row's other fields as JSON (values that JSON has no type for, such as dates, as text)."""
    return json.dumps(fields, ensure_ascii=False, default=str)


def split(rows) -> tuple[tuple[Item, ...], tuple[InputError, ...]]:
    items = tuple(r for r in rows if isinstance(r, Item))
    errors = tuple(r for r in rows if isinstance(r, InputError))
    return items, errors
