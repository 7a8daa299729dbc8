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

import json
import logging
import os
from collections import Counter
from pathlib import Path

from core.audio.readers import AUDIO_SUFFIXES
from core.dataset import tables, webdataset
from core.dataset.rows import AUDIO_FIELD, InputError, Inputs, Item, path_row, printable, split
from core.errors import CodecError

logger = logging.getLogger(__name__)

NO_SUFFIX = "(none)"  # how files without an extension are counted among the skipped


def read_inputs(source: Path | str, audio_column: str = AUDIO_FIELD) -> Inputs:
    """The items of a folder, a ``.jsonl`` manifest, ``.parquet`` tables, ``.tar`` shards (a file, a
    folder of them, or a pattern like ``data-{000..099}.tar``) or a ``save_to_disk`` folder."""
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
