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
