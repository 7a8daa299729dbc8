"""The decode side of the inputs: the audio of items, read where it sits (a file; a Parquet row group;
an Arrow record batch; a tar member at its offset) and decoded with the engine's readers and limits.

A decode task gets items of one container chunk at a time (``core.dataset.pipeline`` groups them), so
a Parquet row group or an Arrow batch is read once per task, never the whole file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from core.audio.blocks import Audio
from core.errors import AudioInputError
from core.settings import AudioLimits
from core.units import MIB

HASH_BLOCK_BYTES = MIB  # bytes read at a time for a file's checksum


def chunk_of(path: str, locator: str) -> tuple:
    """What a decode task reads at once for this item: its file, and its row group or record batch."""
    if not locator:
        return (path,)
    where = json.loads(locator)
    return (path, where.get("row_group", where.get("batch", -1)))


def decode_items(paths: list[str], locators: list[str], limits: AudioLimits) -> Iterator[tuple[Audio | None, str, str]]:
    """(audio or None, sha256 of the audio's bytes, reason) for each item, in order."""
    from core.audio.files import load_audio

    tables: dict[tuple, list] = {}  # (file, chunk, column) -> that chunk's audio cells
    for path, locator in zip(paths, locators, strict=True):
        try:
            if not locator and _utf8(path):
                audio = load_audio(path, limits)
                yield audio, _file_sha256(path), ""
                continue
            if not locator:  # a name that is not UTF-8: libsndfile cannot open it; its bytes can be read
                data = _file_bytes(path, limits)
                name = Path(path).name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                yield _decoded(data, name, limits), hashlib.sha256(data).hexdigest(), ""
                continue
            data, name = _bytes(path, json.loads(locator), tables, limits)
            yield _decoded(data, name, limits), hashlib.sha256(data).hexdigest(), ""
        except Exception as e:  # noqa: BLE001 - a bad row never stops the job: its reason goes to errors.jsonl
            yield None, "", _reason(e)


def _decoded(data: bytes, name: str, limits: AudioLimits) -> Audio:
    from core.audio.files import load_audio_bytes

    return load_audio_bytes(data, name, limits)


def _bytes(path: str, where: dict, tables: dict, limits: AudioLimits) -> tuple[bytes, str]:
    if "offset" in where:  # a tar member
        if where["size"] > limits.max_file_bytes:
            raise AudioInputError(f"'{where['member']}' is {where['size']} bytes, over the file-size limit.")
        with open(path, "rb") as f:
            f.seek(where["offset"])
            data = f.read(where["size"])
        if len(data) < where["size"]:
            raise AudioInputError(f"'{where['member']}' is cut short: the shard is truncated.")
        return data, where["member"]
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
        file = Path(cell["path"]) if Path(cell["path"]).is_absolute() else Path(path).parent / cell["path"]
        if file.is_file():
            return file.read_bytes(), name
        raise AudioInputError(f"the row has no audio bytes and its path '{cell['path']}' is not a file here.")
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


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _file_bytes(path: str, limits: AudioLimits) -> bytes:
    size = Path(path).stat().st_size
    if size > limits.max_file_bytes:
        raise AudioInputError(f"the file is {size} bytes, over the {limits.max_file_bytes} bytes limit.")
    return Path(path).read_bytes()


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(HASH_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _reason(e: Exception) -> str:
    from core.errors import CodecError

    return str(e) if isinstance(e, (CodecError, OSError)) else f"{type(e).__name__}: {e}"
