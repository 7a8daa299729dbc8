"""Units and how they are written for people: the one home of ``MIB``, ``GIB`` and ``minutes``.

Codec facts (rates, sizes) live in ``core.codec``; this module holds what is not about the codec.
"""

from __future__ import annotations

MIB = 1 << 20  # bytes in a MiB
GIB = 1024 * MIB  # bytes in a GiB


def minutes(seconds: float) -> str:
    """A duration for a message: seconds under two minutes, else minutes ("95.0 s", "12.5 min")."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def seconds_short_of(seconds: float, limit: float, digits: int = 2) -> str:
    """``seconds`` written with enough digits to read below ``limit`` when it is below it: a clip of
    0.99996 s under a 1 s rule is "0.99996", never "1.00"."""
    text = f"{seconds:.{digits}f}"
    while seconds < limit and float(text) >= limit and digits < 9:
        digits += 1
        text = f"{seconds:.{digits}f}"
    return text
