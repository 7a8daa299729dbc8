"""What ``python -m core tokenize`` reads: a folder, a fine-tuning JSONL manifest or a Parquet table.

Every input becomes a list of :class:`Item` in a stable order (the order the manifest gives, or
sorted paths for a folder), so a rerun of the same input assigns every file to the same shard and
resume can trust finished shards. Lines that cannot become an item (bad JSON, no audio field) are
returned as errors with their reason; they never stop the job.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from core.errors import CodecError

logger = logging.getLogger(__name__)

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".opus", ".mp3", ".m4a", ".aac", ".webm", ".aiff", ".w64")  # folder scan
AUDIO_FIELD = "audio"  # the fine-tuning format's audio path field (Qwen3-TTS finetuning/prepare_data.py)


@dataclass(frozen=True)
class Item:
    index: int  # position in the input; fixes the shard and the output order
    key: str  # the audio field as the input gave it (a folder input: the path relative to the folder)
    path: str  # the audio file, absolute
    extra: str  # every other field of the manifest row, as a JSON object (kept for the --jsonl export)


@dataclass(frozen=True)
class InputError:
    index: int  # position in the input (line number - 1 for JSONL)
    key: str  # what identifies the row to the user
    reason: str  # what is wrong and what to do


@dataclass(frozen=True)
class Inputs:
    kind: str  # "folder", "jsonl" or "parquet"
    items: tuple[Item, ...]  # the rows that name an audio file
    errors: tuple[InputError, ...]  # the rows that do not

    @property
    def count(self) -> int:
        return len(self.items) + len(self.errors)

    def fingerprint(self) -> str:
        """sha256 over every item's key and extra fields: a rerun resumes only onto the same input."""
        digest = hashlib.sha256()
        for item in self.items:
            digest.update(f"{item.index}\0{item.key}\0{item.path}\0{item.extra}\n".encode("utf-8", "surrogateescape"))
        for error in self.errors:
            digest.update(f"{error.index}\0{error.key}\0!\n".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()


def read_inputs(source: Path, audio_column: str = AUDIO_FIELD) -> Inputs:
    """The items of a folder (recursive), a ``.jsonl`` manifest or a ``.parquet`` table."""
    source = Path(source)
    if source.is_dir():
        return _folder(source)
    if not source.is_file():
        raise CodecError(f"{source} does not exist; give a folder of audio, a .jsonl manifest or a .parquet table.")
    suffix = source.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return _jsonl(source, audio_column)
    if suffix == ".parquet":
        return _parquet(source, audio_column)
    raise CodecError(
        f"{source} is neither a folder, a .jsonl manifest nor a .parquet table; "
        "give one of those (one audio path per row)."
    )


def _folder(root: Path) -> Inputs:
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES)
    if not paths:
        raise CodecError(f"{root} holds no audio files ({', '.join(AUDIO_SUFFIXES)}); check the folder.")
    items = tuple(Item(i, p.relative_to(root).as_posix(), str(p.resolve()), "{}") for i, p in enumerate(paths))
    return Inputs("folder", items, ())


def _resolve(base: Path, value: str) -> str:
    """Relative paths in a manifest are relative to the manifest's folder, as people write them."""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _row(index: int, row, base: Path, audio_column: str) -> Item | InputError:
    if not isinstance(row, dict):
        return InputError(index, f"row {index + 1}", "the row is not a JSON object; write one object per line.")
    value = row.get(audio_column)
    if not isinstance(value, str) or not value.strip():
        return InputError(
            index,
            f"row {index + 1}",
            f"no {audio_column!r} field with a file path; add it (the fine-tuning format's audio path).",
        )
    if "://" in value or value.startswith("data:"):
        return InputError(index, value, "URLs are not read by batch jobs; download the file and give its path.")
    extra = {k: v for k, v in row.items() if k != audio_column}
    return Item(index, value, _resolve(base, value), json.dumps(extra, ensure_ascii=False, default=str))


def _split(rows) -> tuple[tuple[Item, ...], tuple[InputError, ...]]:
    items = tuple(r for r in rows if isinstance(r, Item))
    errors = tuple(r for r in rows if isinstance(r, InputError))
    return items, errors


def _jsonl(path: Path, audio_column: str) -> Inputs:
    rows: list[Item | InputError] = []
    with open(path, "rb") as f:  # line by line: one bad byte costs its line, not the run (issue 19)
        for index, raw in enumerate(f):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                rows.append(InputError(index, f"line {index + 1}", f"not UTF-8 (byte {e.start + 1}); fix the line."))
                continue
            if not line.strip():
                rows.append(InputError(index, f"line {index + 1}", "empty line; remove it."))
                continue
            try:
                rows.append(_row(index, json.loads(line), path.parent, audio_column))
            except json.JSONDecodeError as e:
                rows.append(InputError(index, f"line {index + 1}", f"not valid JSON ({e.msg}); fix the line."))
    items, errors = _split(rows)
    if not items:
        raise CodecError(f"{path} names no audio file; each line needs an {audio_column!r} field.")
    return Inputs("jsonl", items, errors)


def _parquet(path: Path, audio_column: str) -> Inputs:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if audio_column not in table.column_names:
        raise CodecError(
            f"{path} has no {audio_column!r} column (it has {', '.join(table.column_names)}); "
            "name the audio path column with --audio-column."
        )
    rows = [_row(i, row, path.parent, audio_column) for i, row in enumerate(table.to_pylist())]
    items, errors = _split(rows)
    if not items:
        raise CodecError(f"{path} names no audio file in its {audio_column!r} column.")
    return Inputs("parquet", items, errors)
