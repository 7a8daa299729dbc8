"""Parquet shards: the unit of output and of resume.

Item ``i`` belongs to shard ``i // shard_size``. A shard is written once every item in it has a
result (codes or an error): its errors go to ``shard-NNNNN.errors.jsonl`` first, then its codes to
``shard-NNNNN.parquet``, each through a temporary file and an atomic rename. The Parquet file (or,
for a shard whose items all failed, an empty ``shard-NNNNN.empty``) is the commit mark: a shard whose Parquet file exists is done and a rerun skips all its items; any
other file of a half-written shard is rewritten. So a job killed at any moment and restarted ends
with every input exactly once, either as a row of codes or as an error line.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE
from core.dataset.fields import META_KEY, FieldsPlan, fields_columns
from core.dataset.rows import printable
from core.errors import CodecError

logger = logging.getLogger(__name__)

SHARD_DIR = "shards"  # sub-folder of the output that holds the shards
JOB_FILE = "job.json"  # what the output was made from; a rerun must match it to resume
SHARD_DIGITS = 5  # shard-00042.parquet: enough for 100,000 shards
EMPTY_MARK = ".empty"  # the commit mark of a shard whose items all failed (no Parquet file)


@dataclass(frozen=True)
class Done:
    index: int  # item index
    key: str  # what names the row (the audio field as given, a path in a folder, a tar sample's key)
    source: str  # the input file it came from ("" for a manifest row or a folder file)
    source_sha256: str  # checksum of the audio's bytes (the file, the Parquet cell, the tar member)
    codes: np.ndarray  # (frames, 16) int16
    original_samples: int  # 24 kHz samples before padding to whole frames
    extra: str  # the row's other fields, JSON


@dataclass(frozen=True)
class Failed:
    index: int  # item index
    key: str  # what names the row (or "line N")
    reason: str  # what went wrong, in words for the user
    source: str = ""  # the input file (shard) it came from


def shard_of(index: int, shard_size: int) -> int:
    return index // shard_size


def shard_path(out: Path, shard: int, suffix: str = ".parquet") -> Path:
    return out / SHARD_DIR / f"shard-{shard:0{SHARD_DIGITS}d}{suffix}"


def finished_shards(out: Path) -> set[int]:
    """Shards whose Parquet file (or, for a shard of errors alone, its ``.empty`` mark) exists; leftover
    temporary files are not finished shards."""
    folder = out / SHARD_DIR
    if not folder.is_dir():
        return set()
    marks = [*folder.glob("shard-*.parquet"), *folder.glob(f"shard-*{EMPTY_MARK}")]
    return {int(p.name.split("-")[1].split(".")[0]) for p in marks}


def _parquet_shards(out: Path) -> list[int]:
    """Finished shards that have rows (a Parquet file with no rows is not written: readers such as
    ``datasets`` refuse one)."""
    return [s for s in sorted(finished_shards(out)) if shard_path(out, s).exists()]


def check_job(out: Path, job: dict) -> bool:
    """Record ``job`` in a new output folder, or check that an existing one was made from the same
    job. Returns True when resuming. Refuses a folder that holds something else."""
    path = out / JOB_FILE
    if path.exists():
        previous = json.loads(path.read_text())
        changed = sorted(k for k in job if previous.get(k) != job[k])
        if changed:
            raise CodecError(
                f"{out} holds a tokenize job made with other {', '.join(changed)}; "
                "resume needs the same input and options: choose another -o or remove that folder."
            )
        return True
    if out.exists() and any(out.iterdir()):
        raise CodecError(f"{out} is not empty and holds no tokenize job; choose a new or empty -o folder.")
    (out / SHARD_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(job, indent=2) + "\n")
    return False


def atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _schema(plan: FieldsPlan):
    import pyarrow as pa

    ours = pa.schema(
        [
            ("index", pa.int64()),  # position in the input
            ("audio", pa.string()),  # what names the row: the audio field as given, a path, a tar key
            ("source", pa.string()),  # the input file (Parquet, tar shard) the row came from, or ""
            ("source_sha256", pa.string()),  # checksum of the audio's bytes
            ("audio_codes", pa.list_(pa.list_(pa.int16(), NUM_CODEBOOKS))),  # frames x 16, values 0..2047
            ("frames", pa.int32()),  # code frames (12.5 per second)
            ("original_samples", pa.int64()),  # 24 kHz samples before padding to whole frames
            ("duration_s", pa.float64()),  # seconds of audio
            ("model", pa.string()),  # checkpoint or hub id that made the codes
            ("versions", pa.string()),  # JSON: package versions that shape the codes
        ]
    )
    schema = pa.schema(list(ours) + list(plan.schema))  # type: ignore[call-overload]
    return schema.with_metadata({META_KEY: json.dumps(plan.metadata())})


def _text(value: str) -> str:
    """A file name as UTF-8 text: bytes that are not UTF-8 (Python keeps them as surrogates) and
    control characters shown as ``\\xNN`` (a name of any bytes must not end the run, nor
    reach a terminal raw)."""
    return printable(value)


def write_shard(
    out: Path, shard: int, done: list[Done], failed: list[Failed], model: str, versions: dict, plan: FieldsPlan
) -> Path:
    """Write one finished shard atomically (errors first; the Parquet file last, as the commit mark)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    errors = "".join(
        json.dumps(
            {"index": f.index, "audio": _text(f.key), "source": _text(f.source), "reason": _text(f.reason)},
            ensure_ascii=False,
        )
        + "\n"
        for f in sorted(failed, key=lambda f: f.index)
    )
    atomic_write_text(shard_path(out, shard, ".errors.jsonl"), errors)
    done = sorted(done, key=lambda d: d.index)
    flat = np.concatenate([d.codes.reshape(-1) for d in done]).astype(np.int16) if done else np.zeros(0, np.int16)
    frames = np.array([d.codes.shape[0] for d in done], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(frames)]).astype(np.int32)
    codes = pa.ListArray.from_arrays(
        pa.array(offsets), pa.FixedSizeListArray.from_arrays(pa.array(flat), NUM_CODEBOOKS)
    )
    versions_json = json.dumps(versions, sort_keys=True)
    columns = {
        "index": [d.index for d in done],
        "audio": [_text(d.key) for d in done],
        "source": [_text(d.source) for d in done],
        "source_sha256": [d.source_sha256 for d in done],
        "audio_codes": codes,
        "frames": frames.astype(np.int32),
        "original_samples": [d.original_samples for d in done],
        "duration_s": [d.original_samples / SAMPLE_RATE for d in done],
        "model": [model] * len(done),
        "versions": [versions_json] * len(done),
    }
    columns.update(fields_columns([d.extra for d in done], plan))
    table = pa.table(columns, schema=_schema(plan))
    if not done:
        path = shard_path(out, shard, EMPTY_MARK)
        atomic_write_text(path, "")
        logger.info("wrote %s: no rows, %d errors", path.name, len(failed))
        return path
    path = shard_path(out, shard)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    logger.info("wrote %s: %d rows, %d errors", path.name, len(done), len(failed))
    return path


def shard_fields(out: Path) -> dict:
    """Which columns of the shards are the input's fields (the schema metadata); {} without shards."""
    import pyarrow.parquet as pq

    for shard in _parquet_shards(out):
        meta = pq.read_schema(shard_path(out, shard)).metadata or {}
        return json.loads(meta.get(META_KEY, b"{}"))
    return {}


def read_shards(out: Path, columns: list[str] | None = None) -> Iterator:
    """The finished shards' tables in shard order."""
    import pyarrow.parquet as pq

    for shard in _parquet_shards(out):
        yield pq.read_table(shard_path(out, shard), columns=columns)


def read_errors(out: Path) -> list[dict]:
    """Error lines of the finished shards, in input order."""
    lines: list[dict] = []
    for shard in sorted(finished_shards(out)):
        text = shard_path(out, shard, ".errors.jsonl").read_text(encoding="utf-8")
        lines.extend(json.loads(line) for line in text.splitlines() if line)
    return lines


def codes_of(table, row: int) -> np.ndarray:
    """One row's codes as an int16 array (frames, 16)."""
    values = table.column("audio_codes")[row].values.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.int16).reshape(-1, NUM_CODEBOOKS)


@dataclass
class ShardWriter:
    """Collects results as they arrive (in any order) and writes each shard once it is complete."""

    out: Path  # the output folder
    shard_size: int  # items per shard
    model: str  # recorded in every row
    versions: dict  # recorded in every row
    plan: FieldsPlan  # the input's fields as columns (one schema for every shard)
    pending: dict[int, set[int]] = field(default_factory=dict)  # shard -> item indices still without a result
    done: dict[int, list[Done]] = field(default_factory=dict)  # shard -> results so far
    failed: dict[int, list[Failed]] = field(default_factory=dict)  # shard -> errors so far
    written: list[int] = field(default_factory=list)  # shards written by this run

    def expect(self, shard: int, indices: set[int]) -> None:
        self.pending[shard] = set(indices)
        self.done.setdefault(shard, [])
        self.failed.setdefault(shard, [])

    def add(self, result: Done | Failed) -> None:
        shard = shard_of(result.index, self.shard_size)
        (self.done if isinstance(result, Done) else self.failed)[shard].append(result)  # type: ignore[arg-type]
        self.pending[shard].discard(result.index)
        self.flush(shard)

    def flush(self, shard: int) -> None:
        if shard in self.pending and not self.pending[shard]:
            done, failed = self.done.pop(shard), self.failed.pop(shard)
            write_shard(self.out, shard, done, failed, self.model, self.versions, self.plan)
            del self.pending[shard]
            self.written.append(shard)

    @property
    def complete(self) -> bool:
        return not self.pending
