"""What ``python -m core tokenize`` reads: a folder of audio, a fine-tuning JSONL manifest, Parquet
(audio paths, or the audio inside: the Hub's ``{bytes, path}`` structs or a binary column), WebDataset
``.tar`` shards, or a Hugging Face ``datasets`` folder saved with ``save_to_disk``.

Every input becomes a list of :class:`Item` in a stable order (the order the input gives, or sorted
paths for a folder), so a rerun of the same input assigns every row to the same shard and resume can
trust finished shards. Rows that cannot become an item (bad JSON, no audio, a member that is not
JSON) are returned as errors with their reason; they never stop the job. Files a folder holds that
are not audio are counted as skipped, by extension; nothing is left out without a line somewhere.
Only the index is built here: audio held inside Parquet, Arrow or tar files is read by the decode
tasks (:mod:`core.dataset.decode`), a row group or a shard at a time. Each format keeps its index
half and its read half in one module: :mod:`core.dataset.audio_files` (a folder, a JSONL manifest),
:mod:`core.dataset.parquet_arrow` (Parquet, ``save_to_disk`` folders), :mod:`core.dataset.webdataset`
(tar shards).
"""

from __future__ import annotations

import logging
from pathlib import Path

from core.dataset import audio_files, parquet_arrow, webdataset
from core.dataset.rows import AUDIO_FIELD, Inputs
from core.errors import CodecError

logger = logging.getLogger(__name__)


def read_inputs(
    source: Path | str, audio_column: str = AUDIO_FIELD, root: Path | None = None, exclude: Path | None = None
) -> Inputs:
    """The items of a folder, a ``.jsonl`` manifest, ``.parquet`` tables, ``.tar`` shards (a file, a
    folder of them, or a pattern like ``data-{000..099}.tar``) or a ``save_to_disk`` folder.

    ``root``: the folder every path a row names must lie in (``--data-root``); default, the folder
    given, or the folder of the manifest / table that names the path. ``exclude``: the job's output
    folder, never read as input (it may lie inside an input folder)."""
    text = str(source)
    if not Path(text).exists() and any(c in text for c in "{*?["):
        paths = webdataset.expand(text)
        if text.lower().endswith(".parquet"):
            return parquet_arrow.read_parquet(paths, audio_column, root)
        return webdataset.read_shards(paths, text)
    source = Path(text)
    if source.is_dir():
        if parquet_arrow.is_saved_dataset(source):
            return parquet_arrow.read_saved_dataset(source, audio_column, root)
        files = sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith("."))
        suffixes = {p.suffix.lower() for p in files}
        if files and suffixes == {".tar"}:
            return webdataset.read_shards(files, text)
        if files and suffixes == {".parquet"}:
            return parquet_arrow.read_parquet(files, audio_column, root)
        return audio_files.read_folder(source, root, exclude)
    if not source.is_file():
        raise CodecError(
            f"{source} does not exist; give a folder of audio, a .jsonl manifest, a .parquet table, "
            ".tar shards or a datasets folder saved with save_to_disk."
        )
    suffix = source.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return audio_files.read_manifest(source, audio_column, root)
    if suffix == ".parquet":
        return parquet_arrow.read_parquet([source], audio_column, root)
    if suffix == ".tar":
        return webdataset.read_shards([source], text)
    raise CodecError(
        f"{source} is neither a folder, a .jsonl manifest, a .parquet table nor a .tar shard; "
        "give one of those (compressed shards: decompress them to .tar first)."
    )
