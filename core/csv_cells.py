"""Every CSV this project writes: a cell that a spreadsheet would run as a formula is written as text.

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and,
in some of them, a tab or carriage return before one) as a formula: a listener's nickname
``=cmd|' /C calc'!A0`` or a file name ``=HYPERLINK(...)`` would run on the owner's machine when
they open the export. Such a cell is written with a leading ``'`` (OWASP's advice; spreadsheets
show the text, a CSV reader sees the quote), unless the whole cell is a number (``-3.2``, ``+1``,
``-inf``: a number is no formula, and the column stays numeric). Numbers given as numbers are
never touched.

Use :func:`writer` and :func:`dict_writer` instead of ``csv.writer`` / ``csv.DictWriter``
(``tests/core/test_csv_cells.py`` fails on any other CSV writer in the code).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """``value`` as it may go into a CSV: a text that would start a formula gets a leading ``'``."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value if value == value.strip() else "'" + value  # " -1" would be a number to float() only


class _Writer:
    """``csv.writer`` whose cells pass through :func:`cell`."""

    def __init__(self, f, **kwargs):
        self._writer = csv.writer(f, **kwargs)

    def writerow(self, row: Iterable) -> Any:
        return self._writer.writerow([cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable]) -> None:
        for row in rows:
            self.writerow(row)


class _DictWriter:
    """``csv.DictWriter`` whose cells pass through :func:`cell`."""

    def __init__(self, f, fieldnames, **kwargs):
        self._writer = csv.DictWriter(f, fieldnames=fieldnames, **kwargs)

    def writeheader(self) -> Any:
        return self._writer.writeheader()

    def writerow(self, row: Mapping) -> Any:
        return self._writer.writerow({k: cell(v) for k, v in row.items()})

    def writerows(self, rows: Iterable[Mapping]) -> None:
        for row in rows:
            self.writerow(row)


def writer(f, **kwargs) -> _Writer:
    """A ``csv.writer`` on ``f`` that writes formula-like text as text."""
    return _Writer(f, **kwargs)


def dict_writer(f, fieldnames, **kwargs) -> _DictWriter:
    """A ``csv.DictWriter`` on ``f`` that writes formula-like text as text."""
    return _DictWriter(f, fieldnames, **kwargs)
