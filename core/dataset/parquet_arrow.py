"""Tables as inputs: Parquet files and Hugging Face ``datasets`` folders saved with ``save_to_disk``.

The audio column takes one of three layouts, told apart by its Arrow type:

- a string: a file path per row (relative paths are relative to the table's folder);
- a struct with ``bytes`` and/or ``path`` (the ``datasets`` Audio feature, as the Hub's Parquet files
  store it): the file's bytes inside the table, or, where ``bytes`` is null, a path;
- binary: the file's bytes.

The index half (``read_parquet``, ``read_saved_dataset``) is built a row group (Parquet) or a record
batch (Arrow) at a time, without the audio bytes (a struct's ``path`` leaf is read alone); the read
half (``read_cell``) reads the bytes in the decode tasks (:mod:`core.dataset.decode`). The other columns become the row's fields; a column that holds binary data (a
second audio column, an image) is not copied, and the manifest says so.

``save_to_disk`` folders are read with pyarrow directly (``state.json`` lists the ``.arrow`` files,
Arrow IPC streams, memory-mapped): the ``datasets`` package is not needed, and not a dependency of
this project (it pins ``huggingface-hub`` and ``fsspec`` ranges that the model stack does not share).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from core.dataset.audio_files import read_bytes
from core.dataset.rows import (
    AUDIO_FIELD,
    InputError,
    Inputs,
    Item,
    OutsideRoot,
    inside,
    path_row,
    printable,
    split,
    to_json,
)
from core.errors import AudioInputError, CodecError
from core.settings import AudioLimits

logger = logging.getLogger(__name__)

STATE_FILE = "state.json"  # save_to_disk: the Arrow files of one split
DICT_FILE = "dataset_dict.json"  # save_to_disk of a DatasetDict: one folder per split


def is_saved_dataset(folder: Path) -> bool:
    return (folder / STATE_FILE).is_file() or (folder / DICT_FILE).is_file()


def _has_binary(arrow_type) -> bool:
    import pyarrow as pa

    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return True
    if pa.types.is_struct(arrow_type):
        return any(_has_binary(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return _has_binary(arrow_type.value_type)
    return False


def layout(arrow_type, column: str, where: str) -> str:
    """ "path", "struct" or "binary"; a struct with neither ``bytes`` nor ``path`` is refused."""
    import pyarrow as pa

    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "path"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "binary"
    if pa.types.is_struct(arrow_type):
        names = {arrow_type.field(i).name for i in range(arrow_type.num_fields)}
        if names & {"bytes", "path"}:
            return "struct"
        raise CodecError(
            f"{where}: the {column!r} column holds structs with {', '.join(sorted(names))}, but neither "
            "'bytes' nor 'path'; store the audio files' bytes ({bytes, path}, as datasets' Audio(decode=False) "
            "does) or their paths."
        )
    raise CodecError(f"{where}: the {column!r} column is {arrow_type}; it must hold paths, bytes or {{bytes, path}}.")


def _audio_column(schema, audio_column: str, where: str) -> str:
    """The column asked for; or, when the default is absent, the one the datasets metadata calls Audio."""
    if audio_column in schema.names:
        return audio_column
    if audio_column == AUDIO_FIELD:
        features = _features(schema)
        found = [name for name, f in features.items() if isinstance(f, dict) and f.get("_type") == "Audio"]
        if len(found) == 1:
            return found[0]
    raise CodecError(
        f"{where} has no {audio_column!r} column (it has {', '.join(schema.names)}); "
        "name the audio column with --audio-column."
    )


def _features(schema) -> dict:
    meta = (schema.metadata or {}).get(b"huggingface")
    try:
        return dict(json.loads(meta)["info"]["features"]) if meta else {}
    except (ValueError, KeyError, TypeError):
        return {}


class _Rows:
    """Turns the chunks of one table file into items and errors, numbering rows across files."""

    def __init__(self, audio_column: str, root: Path | None):
        self.audio_column = audio_column
        self.root = root  # every path a row names lies inside it (None: the table's own folder)
        self.rows: list[Item | InputError] = []
        self.left_out: dict[str, str] = {}

    def columns(self, schema, where: str) -> tuple[str, str, list[str]]:
        column = _audio_column(schema, self.audio_column, where)
        kind = layout(schema.field(column).type, column, where)
        side = []
        for f in schema:
            if f.name == column:
                continue
            if _has_binary(f.type):
                self.left_out[f.name] = f"{f.type}: binary data is not copied next to the codes (join on index)"
            else:
                side.append(f.name)
        return column, kind, side

    def add(self, path: Path, chunk: int, table, column: str, kind: str, side: list[str], chunk_key: str) -> None:
        """One row group / record batch (``table`` holds the side columns, and ``column`` unless binary)."""
        source = printable(path.name)
        fields = table.select(side).to_pylist() if side else [{}] * table.num_rows
        paths = table.column(column).to_pylist() if kind != "binary" else [None] * table.num_rows
        for row in range(table.num_rows):
            index = len(self.rows)
            if kind == "path":
                self.rows.append(
                    path_row(index, {column: paths[row], **fields[row]}, path.parent, column, source, self.root)
                )
                continue
            cell = paths[row]
            named = cell.get("path") if kind == "struct" and isinstance(cell, dict) else None
            where = {chunk_key: chunk, "row": row, "column": column, "layout": kind}
            if self.root is not None:
                where["root"] = str(self.root)  # a path-only cell is read inside it (default: the table's folder)
            locator = json.dumps(where)
            key = printable(str(named)) if named else f"{source}#{index}"
            self.rows.append(Item(index, key, str(path.resolve()), to_json(fields[row]), locator, source))


def read_parquet(paths: list[Path], audio_column: str = AUDIO_FIELD, root: Path | None = None) -> Inputs:
    """Parquet files, in the order given, one row group at a time (no audio bytes are read here)."""
    import pyarrow.parquet as pq

    rows = _Rows(audio_column, root)
    embedded = False
    for path in paths:
        if not path.is_file():
            rows.rows.append(InputError(len(rows.rows), printable(path.name), "this Parquet file does not exist."))
            continue
        try:
            pf = pq.ParquetFile(path)
        except Exception as e:  # noqa: BLE001 - a damaged file is a line in errors.jsonl, not the end of the job
            reason = f"not a readable Parquet file ({type(e).__name__}: {e}); re-export it."
            rows.rows.append(InputError(len(rows.rows), printable(path.name), reason, printable(path.name)))
            continue
        column, kind, side = rows.columns(pf.schema_arrow, str(path))
        embedded |= kind != "path"
        read = side + ([column] if kind == "path" else [f"{column}.path"] if kind == "struct" else [])
        if kind == "struct" and "path" not in pf.schema_arrow.field(column).type.names:
            read = side  # bytes only: keys come from the row number
        for group in range(pf.num_row_groups):
            table = pf.read_row_group(group, columns=read)
            if kind == "struct" and f"{column}.path" not in read:
                import pyarrow as pa

                table = table.append_column(column, pa.nulls(table.num_rows, pa.struct([("path", pa.string())])))
            rows.add(path, group, table, column, kind, side, "row_group")
    items, errors = split(rows.rows)
    if not items:
        raise CodecError(f"{', '.join(str(p) for p in paths)}: no row with audio in the {audio_column!r} column.")
    return Inputs("parquet", items, errors, left_out=rows.left_out)


def read_saved_dataset(folder: Path, audio_column: str = AUDIO_FIELD, root: Path | None = None) -> Inputs:
    """A ``save_to_disk`` folder of one split: its Arrow files, record batch by record batch."""
    import pyarrow as pa

    if (folder / DICT_FILE).is_file() and not (folder / STATE_FILE).is_file():
        splits = json.loads((folder / DICT_FILE).read_text()).get("splits", [])
        raise CodecError(
            f"{folder} holds a DatasetDict ({', '.join(splits)}); give one split's folder, e.g. {folder / 'train'}."
        )
    files = [folder / f["filename"] for f in json.loads((folder / STATE_FILE).read_text())["_data_files"]]
    rows = _Rows(audio_column, root)
    for path in files:
        with pa.memory_map(str(path)) as source:
            reader = pa.ipc.open_stream(source)
            column, kind, side = rows.columns(reader.schema, str(path))
            for number, batch in enumerate(reader):
                table = pa.Table.from_batches([batch])
                if kind == "struct":
                    struct = table.column(column).combine_chunks()
                    names = struct.type.names
                    paths = struct.field("path") if "path" in names else pa.nulls(len(struct), pa.string())
                    table = table.select(side).append_column(column, pa.StructArray.from_arrays([paths], ["path"]))
                rows.add(path, number, table, column, kind, side, "batch")
    items, errors = split(rows.rows)
    if not items:
        raise CodecError(f"{folder}: no row with audio in the {audio_column!r} column.")
    return Inputs("arrow", items, errors, left_out=rows.left_out)


def read_cell(path: str, where: dict, tables: dict, limits: AudioLimits) -> tuple[bytes, str]:
    """(bytes, name) of one row's audio; ``tables`` holds the one chunk read last (a decode task's
    rows share it)."""
    chunk = where.get("row_group", where.get("batch"))
    key = (path, chunk, where["column"])
    if key not in tables:
        tables.clear()  # one chunk held at a time
        tables[key] = _cells(path, where)
    cell = tables[key][where["row"]]
    name = f"{Path(path).name}#{where['row']}"
    if where["layout"] == "binary":
        return cell or b"", name
    cell = cell or {}
    if cell.get("path"):
        name = str(cell["path"])
    if cell.get("bytes"):
        return cell["bytes"], name
    if cell.get("path"):  # the datasets Audio layout allows a path alone: a file beside the table
        base = Path(path).parent
        try:
            file = inside(Path(where.get("root") or base), base, str(cell["path"]))
        except OutsideRoot as e:
            raise AudioInputError(f"the row has no audio bytes and its path {e}") from None
        return read_bytes(file, limits), name
    raise AudioInputError("the row's audio has neither bytes nor a path: there is no audio in it.")


def _cells(path: str, where: dict) -> list:
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = where["column"]
    if "row_group" in where:
        return pq.ParquetFile(path).read_row_group(where["row_group"], columns=[column]).column(column).to_pylist()
    with pa.memory_map(path) as source:
        for number, batch in enumerate(pa.ipc.open_stream(source)):
            if number == where["batch"]:
                return batch.column(column).to_pylist()
    raise AudioInputError(f"record batch {where['batch']} is missing from {Path(path).name}.")
