"""Safe file names from names people give (uploads, URLs, folders of clips): the one rule.

What we write is named after what the user gave (``my clip (1).mp3`` -> ``my_clip_1_...``), so the
name must be safe on every file system and in a URL: ASCII letters, digits, ``_``, ``-`` and (when
kept) ``.``; every other run of characters becomes one ``_``; no leading or trailing ``.`` or ``_``
(no hidden files, no ``..``). Names with nothing left get the caller's fallback.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")  # runs of anything else become one "_"
_UNSAFE_OR_DOT = re.compile(r"[^A-Za-z0-9_-]+")  # the same, dots included (for stems)


def safe_name(name: str, fallback: str, *, max_chars: int | None = None, dots: bool = True) -> str:
    """``name`` made safe for a file name (see the module); ``dots=False`` for a stem that gets a
    suffix of ours; at most ``max_chars`` characters; ``fallback`` when nothing is left."""
    pattern = _UNSAFE if dots else _UNSAFE_OR_DOT
    return pattern.sub("_", name).strip("._")[:max_chars] or fallback
