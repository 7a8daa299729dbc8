"""Averages over a folder's files that skip what is not available: a value that is missing, not a
number, NaN or infinite is left out of the mean and counted, so one file's NaN never turns a
folder's averages into NaN, and the table says how many it left out."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


def available(value) -> bool:
    """A value a mean may use: a finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Column:
    values: list[float]  # the available values
    left_out: int  # rows that had the column but no available value

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None


def column(rows: list[dict], name: str) -> Column:
    """The available values of ``name`` over ``rows``, and how many rows holding it were left out."""
    values = [float(r[name]) for r in rows if available(r.get(name))]
    held = sum(1 for r in rows if r.get(name) is not None or name in r)
    return Column(values, held - len(values))
