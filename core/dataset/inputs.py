"""What ``python -m core tokenize`` reads: a folder of audio, a fine-tuning JSONL manifest, Parquet
(audio paths, or the audio inside: the Hub's ``{bytes, path}`` structs or a binary column), WebDataset
``.tar`` shards, or a Hugging Face ``datasets`` folder saved with ``save_to_disk``.

Every input becomes a list of :class:`Item` in a stable order (the order the input gives, or sorted
paths for a folder), so a rerun of the same input assigns every row to the same shard and resume can
trust finished shards. Rows that cannot become an item (bad JSON, no audio, a member that is not
JSON) are returned as errors with their reason; they never stop the job. Files a folder holds that
are not audio are counted as skipped, by extension; nothing is left out without a line somewhere.
Only the index is built here: audio held inside Parquet, Arrow or tar files is read by the decode
tasks (:mod:`core.dataset.fetch`), a row group or a shard at a time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.audio.readers import AUDIO_SUFFIXES
from core.errors import CodecError

logger = logging.getLogger(__name__)

AUDIO_FIELD = "audio"  # the fine-tuning format's audio path field (Qwen3-TTS finetuning/prepare_data.py)
NO_SUFFIX = "(none)"  # how files without an extension are counted among the skipped


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


def read_inputs(source: Path | str, audio_column: str = AUDIO_FIELD) -> Inputs:
    """The items of a folder, a ``.jsonl`` manifest, ``.parquet`` tables, ``.tar`` shards (a file, a
    folder of them, or a pattern like ``data-{000..099}.tar``) or a ``save_to_disk`` folder."""
    from core.dataset import tables, webdataset

    text = str(source)
    if not Path(text).exists() and any(c in text for c in "{*?["):
        paths = webdataset.expand(text)
        if text.lower().endswith(".parquet"):
            return tables.read_parquet(paths, audio_column)
        return webdataset.read_shards(paths, text)
    source = Path(text)
    if source.is_dir():
        if tables.is_saved_dataset(source):
            return tables.read_saved_dataset(source, audio_column)
        files = sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith("."))
        suffixes = {p.suffix.lower() for p in files}
        if files and suffixes == {".tar"}:
            return webdataset.read_shards(files, text)
        if files and suffixes == {".parquet"}:
            return tables.read_parquet(files, audio_column)
        return _folder(source)
    if not source.is_file():
        raise CodecError(
            f"{source} does not exist; give a folder of audio, a .jsonl manifest, a .parquet table, "
            ".tar shards or a datasets folder saved with save_to_disk."
        )
    suffix = source.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return _jsonl(source, audio_column)
    if suffix == ".parquet":
        return tables.read_parquet([source], audio_column)
    if suffix == ".tar":
        return webdataset.read_shards([source], text)
    raise CodecError(
        f"{source} is neither a folder, a .jsonl manifest, a .parquet table nor a .tar shard; "
        "give one of those (compressed shards: decompress them to .tar first)."
    )


def _folder(root: Path) -> Inputs:
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
    items = tuple(
        Item(i, printable(p.relative_to(root).as_posix()), str(p.resolve()), "{}") for i, p in enumerate(paths)
    )
    listed = tuple(printable(p.relative_to(root).as_posix()) for p in skipped)
    return Inputs("folder", items, (), dict(sorted(counts.items())), listed)


def _resolve(base: Path, value: str) -> str:
    """Relative paths in a manifest are relative to the manifest's folder, as people write them."""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def path_row(index: int, row, base: Path, audio_column: str, source: str = "") -> Item | InputError:
    """A manifest row (JSONL line, Parquet row) whose audio field is a file path."""
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
    extra = {k: v for k, v in row.items() if k != audio_column}
    return Item(index, value, _resolve(base, value), to_json(extra), "", source)


def to_json(fields: dict) -> str:
    """The row's other fields as JSON (values that JSON has no type for, such as dates, as text)."""
    return json.dumps(fields, ensure_ascii=False, default=str)


def split(rows) -> tuple[tuple[Item, ...], tuple[InputError, ...]]:
    items = tuple(r for r in rows if isinstance(r, Item))
    errors = tuple(r for r in rows if isinstance(r, InputError))
    return items, errors


def _jsonl(path: Path, audio_column: str) -> Inputs:
    rows: list[Item | InputError] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for index, line in enumerate(f):
            if not line.strip():
                rows.append(InputError(index, f"line {index + 1}", "empty line; remove it."))
                continue
            try:
                rows.append(path_row(index, json.loads(line), path.parent, audio_column))
            except json.JSONDecodeError as e:
                rows.append(InputError(index, f"line {index + 1}", f"not valid JSON ({e.msg}); fix the line."))
    items, errors = split(rows)
    if not items:
        raise CodecError(f"{path} names no audio file; each line needs an {audio_column!r} field.")
    return Inputs("jsonl", items, errors)
