"""JSON from a client, parsed with its nesting bounded: every route and socket that reads JSON a
client sent goes through :func:`loads`. Python's parser recurses once per level, so 100,000 nested
brackets ended a request with a RecursionError (a bare 500); nothing this app is sent nests deeper
than a few levels, so a body nested past ``MAX_DEPTH`` is refused as not JSON before it is parsed."""

from __future__ import annotations

import json
import re

MAX_DEPTH = 32  # levels of arrays and objects; the app's own bodies use at most 3
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings (skipped whole) and brackets


def depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in ``data`` (brackets inside strings not counted)."""
    level = deepest = 0
    for token in _TOKENS.finditer(data):
        mark = token.group()
        if mark in (b"[", b"{"):
            level += 1
            deepest = max(deepest, level)
        elif mark in (b"]", b"}"):
            level -= 1
    return deepest


def loads(data: bytes | str, max_depth: int = MAX_DEPTH):
    """``json.loads`` of ``data``; ValueError (as for any text that is not JSON) when it nests deeper
    than ``max_depth``."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if depth(raw) > max_depth:
        # i18n-exempt: every caller answers this ValueError with its own localized refusal
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    return json.loads(raw)
