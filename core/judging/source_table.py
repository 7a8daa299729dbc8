"""One table of every source of a clip: a column per source, a row per metric.

Rows: the metric catalogue's rows marked ``source_table`` (``core.analysis.catalog``): PESQ-WB, STOI,
SI-SDR and the log-mel distance against the original (``core.analysis.metrics``, PESQ and STOI on
its first ``METRIC_WINDOW_S`` seconds), DistillMOS of the source alone (the same window: ≈60 MB of
RAM per second of audio otherwise), then the bitrate. The original's own column holds
its DistillMOS, the yardstick for the others'. Every number is measured on this clip; a metric that
cannot be computed is None with the reason in ``notes``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from core.analysis import catalog, metrics
from core.analysis.judges import DEFAULT_JUDGES, Judges
from core.codec import SAMPLE_RATE
from core.judging.sources import Source

logger = logging.getLogger(__name__)

_ROWS = tuple(m for m in catalog.METRICS if m.source_table)
METRICS = catalog.ids(m for m in _ROWS if m.reads == catalog.PAIR)  # against the original (analysis.compare's ids)
MOS = catalog.MOS  # of the source alone, 1..5
BITRATE = "Bitrate"  # bit/s
ROWS = (*catalog.ids(_ROWS), BITRATE)
HIGHER_IS_BETTER = {m.id: m.higher_is_better for m in _ROWS}
UNITS = {m.id: m.unit for m in _ROWS if m.unit} | {BITRATE: "bit/s"}
WINDOW_S = metrics.METRIC_WINDOW_S  # DistillMOS looks at the same first seconds as PESQ and STOI


@dataclass(frozen=True)
class Column:
    source: dict  # Source.facts(): id, kind, label, key, bitrate_bps
    values: dict  # row name -> value or None
    notes: dict  # row name -> why it is None, or what part of the clip it covers


@dataclass(frozen=True)
class SourceTable:
    columns: tuple[Column, ...]  # the original first, then the sources in the order given
    seconds: float  # time taken
    rows: tuple[str, ...] = ROWS  # ROWS less those of judging models not chosen (SIM-WavLM beside GE2E)

    def column(self, source_id: str) -> Column:
        return next(c for c in self.columns if c.source["id"] == source_id)

    def to_dict(self) -> dict:
        return {
            "rows": list(self.rows),
            "columns": [{"source": c.source, "values": c.values, "notes": c.notes} for c in self.columns],
            "seconds": self.seconds,
        }

    def csv_rows(self) -> list[list]:
        """Header (metric, then each source's id) and one row per metric."""
        out: list[list] = [["metric", *(c.source["id"] for c in self.columns)]]
        out += [[row, *(c.values.get(row) for c in self.columns)] for row in self.rows]
        return out

    def text(self) -> str:
        """The table as aligned plain text (the CLI prints it)."""
        header = ["", *(c.source["label"] for c in self.columns)]
        lines = [header] + [
            [_row_name(row), *(_cell(c.values.get(row), row) for c in self.columns)] for row in self.rows
        ]
        widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
        return "\n".join(
            "  ".join(str(v).rjust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in lines
        )


def _row_name(row: str) -> str:
    """A row with its unit (never a bare "Bitrate 2200"); the bitrate in kbit/s, as people say it."""
    if row == BITRATE:
        return f"{row} (kbit/s)"
    return f"{row} ({UNITS[row]})" if row in UNITS else row


def _cell(value, row: str = "") -> str:
    if value is None:
        return "—"
    if row == BITRATE:
        return f"{value / 1000:.1f}"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2f}"


def measure(
    original: Source,
    sources: Iterable[Source],
    device: str = "cpu",
    mos: bool = True,
    progress: Callable[[float], None] | None = None,
    cache: dict | None = None,
    judges: Judges = DEFAULT_JUDGES,
) -> SourceTable:
    """The table for ``sources`` (each with samples) against ``original``, its rows by the judging
    models ``judges`` names. ``cache``: a dict kept by the caller, {(source digest, original digest,
    ...): column values}, so a source measured once is not measured again when the table grows (the
    ladder adds levels)."""
    started = time.perf_counter()
    rows = tuple(r for r in ROWS if r not in catalog.BY_ID or judges.computes(catalog.BY_ID[r]))
    sources = list(sources)
    ref = np.asarray(original.samples, dtype=np.float32)
    rate = original.rate_hz  # every source of a set is at its comparison rate (core.audio.rates)
    ref_key = _digest(ref)
    columns = [_original_column(original, ref, device, mos, cache, ref_key)]
    for i, source in enumerate(sources):
        if progress:
            progress(i / max(len(sources), 1))
        samples = np.asarray(source.samples, dtype=np.float32)
        key = (_digest(samples), ref_key, mos, judges, rate)
        found = cache.get(key) if cache is not None else None
        if found is None:
            found = _measure_one(ref, samples, device, mos, judges, rate)
            if cache is not None:
                cache[key] = found
        values, notes = found
        columns.append(Column(source.facts(), values | {BITRATE: source.bitrate_bps}, notes))
    return SourceTable(tuple(columns), time.perf_counter() - started, rows)


def _original_column(original: Source, ref, device, mos, cache, ref_key) -> Column:
    key = ("original", ref_key, mos)
    found = cache.get(key) if cache is not None else None
    if found is None:
        value, note = _mos(ref, device, original.rate_hz) if mos else (None, "not asked for")
        found = ({MOS: value}, {MOS: note} if note else {})
        if cache is not None:
            cache[key] = found
    values = dict.fromkeys(ROWS) | found[0]
    return Column(original.facts(), values, found[1])


def _measure_one(
    ref: np.ndarray, samples: np.ndarray, device: str, mos: bool, judges: Judges, rate: int = SAMPLE_RATE
) -> tuple[dict, dict]:
    values: dict = {}
    notes: dict = {}
    for m in metrics.compare(ref, samples, rate, metrics=METRICS, judges=judges):  # no PESQ-NB: the table has none
        values[m.name] = m.value
        if m.note:
            notes[m.name] = m.note
    value, note = _mos(samples, device, rate) if mos else (None, "not asked for")
    values[MOS] = value
    if note:
        notes[MOS] = note
    return values, notes


def _mos(samples: np.ndarray, device: str, rate: int = SAMPLE_RATE) -> tuple[float | None, str]:
    from core.judging import verdict

    window = samples[: int(WINDOW_S * rate)]
    note = f"on the first {WINDOW_S:g} s" if window.size < samples.size else ""
    try:
        value = verdict.predictor(device).predict(window, rate)
    except Exception as e:  # noqa: BLE001 - the other rows stand without it
        logger.warning("DistillMOS failed: %s: %s", type(e).__name__, e)
        return None, f"could not be computed: {type(e).__name__}"
    if value is None:
        return None, f"needs at least {verdict.MIN_MOS_S:g} s of sound"
    return value, note


def _digest(samples: np.ndarray) -> str:
    import hashlib

    return hashlib.blake2b(np.ascontiguousarray(samples).tobytes(), digest_size=16).hexdigest()
