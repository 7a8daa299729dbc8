"""The server's record of each round trip, found by its result id (its request folder's name): the
WAVs it wrote, a digest of their samples, the samples themselves while the record is among the
newest, and what the follow-up events computed (metrics, verdict, the table of every source, the
round trip's details). Later events read the record, never what a client sends back (a ``/report``
must never print "Close to the original" from a verdict a client made up, without the
random-weights caveat), and never decode or hash the two WAVs again: the round trip hands the record
the samples it wrote.

A client names the record by the ``result_id`` of the round trip's details (``/roundtrip``'s JSON,
and ``/metrics``' JSON after it); the id only chooses among results this server computed, under
the engine (``scope``) that computed them, and what is measured is always the record's own WAVs.
A bounded number of records is kept, the oldest forgotten first; an event without a record (an API
call with any two clips, or a record forgotten) computes from the files it was given.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.audio import rates
from core.codec import SAMPLE_RATE

MAX_RECORDS = 256  # round trips remembered (each a few KB of JSON without its samples)
KEEP_SAMPLES = 4  # the newest records keep their samples in memory (10 minutes of both clips: 115 MB)
ID_KEY = "result_id"  # the record's id in the details and metrics JSON

_records: OrderedDict[str, Record] = OrderedDict()
_lock = threading.Lock()


@dataclass
class Record:
    result_id: str
    scope: str  # the engine whose result it is (``scope``)
    original: Path  # the round trip's WAVs, in its request folder
    reconstruction: Path
    digest: str  # of both clips' samples as written, taken once
    values: dict[str, Any] = field(default_factory=dict)  # "roundtrip", "metrics", "verdict", "comparison"
    samples: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    decodes: int = 0  # WAVs read back from disk for this record (the samples had been let go)
    rate_hz: int = SAMPLE_RATE  # the rate both clips are compared at (48000 beside a 48 kHz decoder)


def scope(engine) -> str:
    """Whose results: the engine's model (and the verdict's window count)."""
    return f"{engine.settings.model}|{engine.model_path}|{engine.settings.mos_windows}"


def samples_digest(original: np.ndarray, reconstruction: np.ndarray) -> str:
    """blake2b of both clips' float32 samples."""
    h = hashlib.blake2b(digest_size=16)
    for x in (original, reconstruction):
        h.update(np.ascontiguousarray(x, dtype=np.float32).tobytes())
    return h.hexdigest()


def open_record(
    engine, original: Path, reconstruction: Path, samples: tuple[np.ndarray, np.ndarray], rate_hz: int = SAMPLE_RATE
) -> Record:
    """The record of a round trip just written (``samples``: exactly what its two WAVs hold, at ``rate_hz``)."""
    result_id = Path(original).parent.name
    digest = samples_digest(*samples)
    record = Record(result_id, scope(engine), Path(original), Path(reconstruction), digest, rate_hz=rate_hz)
    record.samples = samples
    with _lock:
        _records.pop(result_id, None)
        _records[result_id] = record
        while len(_records) > MAX_RECORDS:
            _records.popitem(last=False)
        _let_go_of_old_samples()
    return record


def find(engine, data, original=None, reconstruction=None) -> Record | None:
    """The record a follow-up event names under this engine, or None: by ``data`` (the round trip's
    details or the metrics JSON with ``result_id``, or the id itself), else by the two files when
    they are a record's own WAVs (an API caller that passes the server's paths back)."""
    result_id = data.get(ID_KEY) if isinstance(data, dict) else data
    with _lock:
        if isinstance(result_id, str):
            record = _records.get(result_id)
        else:
            files = (str(original), str(reconstruction))
            record = next((r for r in _records.values() if (str(r.original), str(r.reconstruction)) == files), None)
    return record if record is not None and record.scope == scope(engine) else None


def remember(record: Record | None, kind: str, value) -> None:
    """Keep ``value`` as the record's ``kind`` result ("roundtrip", "metrics", "verdict", "comparison")."""
    if record is not None:
        with _lock:
            record.values[kind] = value


def recall(record: Record | None, kind: str):
    """The record's ``kind`` result, or None."""
    if record is None:
        return None
    with _lock:
        return record.values.get(kind)


def samples_of(record: Record, limits) -> tuple[np.ndarray, np.ndarray]:
    """Both clips' samples: held since the round trip, or read back once from the record's WAVs."""
    with _lock:
        held = record.samples
    if held is not None:
        return held
    held = (
        rates.read_at(record.original, limits, record.rate_hz),
        rates.read_at(record.reconstruction, limits, record.rate_hz),
    )
    with _lock:
        record.decodes += 2
        record.samples = held
        if record.result_id in _records:
            _records.move_to_end(record.result_id)
        _let_go_of_old_samples()
    return held


def _let_go_of_old_samples() -> None:
    """Only the newest ``KEEP_SAMPLES`` records hold samples (call under the lock)."""
    holding = [r for r in _records.values() if r.samples is not None]
    for old in holding[: max(0, len(holding) - KEEP_SAMPLES)]:
        old.samples = None
