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

from core.units import MIB

AUDIO_FIELD = "audio"  # the fine-tuning format's audio path field (Qwen3-TTS finetuning/prepare_data.py)
MAX_JSON_BYTES = MIB  # a JSONL line or a .json tar member: larger is an error row (keep big data outside)
MAX_JSON_DEPTH = 64  # nesting of a row's JSON: deeper is an error row (100,000 levels ended the run before)


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
    """A name as it can be written to JSON, Parquet, logs and a terminal: bytes that were not UTF-8
    (kept by the OS and tarfile as surrogate escapes) become ``\\xNN``, and so do control characters
    (terminal escapes, bells, new lines); the file itself is still opened by its real name."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class JsonRefused(ValueError):
    """JSON a dataset holds that is not read: not valid, too large or nested too deep (the reason)."""


def parse_json(data: bytes | str, what: str):
    """``data`` parsed, within ``MAX_JSON_BYTES`` and ``MAX_JSON_DEPTH``; else :class:`JsonRefused`
    saying which rule ``what`` (``"the line"``, ``"member a.json"``) broke and what to do."""
    if len(data) > MAX_JSON_BYTES:
        raise JsonRefused(
            f"{what} is {len(data) / MIB:.1f} MiB of JSON, over the {MAX_JSON_BYTES // MIB} MiB a row's fields may "
            "hold; keep large data in files of its own."
        )
    try:
        value = json.loads(data)
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    except (ValueError, UnicodeDecodeError) as e:
        raise JsonRefused(f"{what} is not valid JSON ({getattr(e, 'msg', e)}); fix it.") from None
    else:
        depth = _depth(value)
    if depth > MAX_JSON_DEPTH:
        raise JsonRefused(f"{what} is JSON nested over {MAX_JSON_DEPTH} levels deep; flatten it.")
    return value


def _depth(value) -> int:
    """Nesting of a parsed JSON value, without recursion (stops counting past MAX_JSON_DEPTH)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_JSON_DEPTH:
                return level
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


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
