"""A sentence as data: a code and its fields, said from a table of templates (English for the command
line and the logs, the page's catalogue for the reader's language). ``core.parity.words`` and
``core.doctor.words`` hold their tables; a field named ``<x>_code`` is itself a code, said from the same
table as ``{x}``."""

from __future__ import annotations


def say(code: str, fields: dict, table: dict[str, str]) -> str:
    """The sentence for ``code`` in ``table`` with ``fields`` filled in."""
    filled = {
        name.removesuffix("_code"): say(value, {}, table) if name.endswith("_code") else value
        for name, value in fields.items()
    }
    return table[code].format(**filled) if filled else table[code]
