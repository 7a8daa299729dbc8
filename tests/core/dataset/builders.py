"""Inputs as people store them, built in the tests: Hub-layout Parquet with the audio inside, WebDataset
tar shards, and audio files in the formats the readers open (real encoders: libsndfile's)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import soundfile as sf

from tests.conftest import speechlike

FORMATS = {  # extension -> soundfile (format, subtype)
    "wav": ("WAV", "PCM_16"),
    "flac": ("FLAC", "PCM_16"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
    "oga": ("OGG", "VORBIS"),
    "aif": ("AIFF", "PCM_16"),
    "caf": ("CAF", "PCM_16"),
}
RATE = 16_000  # Hz: the files need resampling, as most speech datasets do


def audio_bytes(ext: str, seconds: float, seed: int) -> bytes:
    fmt, subtype = FORMATS[ext]
    buffer = io.BytesIO()
    sf.write(buffer, speechlike(seconds, seed, RATE), RATE, format=fmt, subtype=subtype)
    return buffer.getvalue()


def hub_parquet(path: Path, rows: list[dict], row_group_size: int = 2) -> Path:
    """The datasets Audio layout: an ``audio`` struct column {bytes, path}, plus the rows' other fields,
    and the ``huggingface`` schema metadata the Hub's files carry."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    audio_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    columns = {"audio": pa.array([r["audio"] for r in rows], type=audio_type)}
    for name in rows[0]:
        if name != "audio":
            columns[name] = pa.array([r.get(name) for r in rows])
    features = {"audio": {"_type": "Audio"}, **{n: {"_type": "Value"} for n in columns if n != "audio"}}
    table = pa.table(columns).replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def tar_shard(path: Path, members: list[tuple[str, bytes]]) -> Path:
    """A WebDataset shard: members in the order given (name, bytes); names may be bytes (not UTF-8)."""
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def as_file(folder: Path, name: str, data: bytes) -> Path:
    """The same bytes as a file, for ``python -m core encode``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


def same_audio(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b))
