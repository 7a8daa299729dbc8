"""What the server computed about a pair of clips (round trip details, metrics, verdict), kept by
the clips' content so that later events use the server's own results, never what a client sends
back (a ``/report`` must never print "Close to the original" from a verdict a client made up,
without the random-weights caveat).

Keyed by a digest of both files' bytes (the events receive Gradio's copies of the round trip's
WAVs, byte for byte the same) and by a ``scope`` (the engine whose results they are); a bounded
number of entries, the oldest forgotten first. Whatever is missing is recomputed by the caller.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from core.units import MIB

MAX_ENTRIES = 256  # results remembered (each a few KB of JSON)
_CHUNK = MIB  # bytes read at a time for a digest

_memo: OrderedDict[tuple, Any] = OrderedDict()
_lock = threading.Lock()


def digest(path: Path | str) -> str:
    """blake2b of the file's bytes (about 0.1 s for 10 minutes of float WAV)."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def scope(engine) -> str:
    """Whose results: the engine's model (and the verdict's window count)."""
    return f"{engine.settings.model}|{engine.model_path}|{engine.settings.mos_windows}"


def _key(kind: str, original, reconstruction, scope: str) -> tuple:
    return kind, scope, digest(original), digest(reconstruction)


def remember(kind: str, original, reconstruction, value, scope: str = "") -> None:
    """Keep ``value`` as the ``kind`` result ("roundtrip", "metrics", "verdict") of this pair."""
    key = _key(kind, original, reconstruction, scope)
    with _lock:
        _memo.pop(key, None)
        _memo[key] = value
        while len(_memo) > MAX_ENTRIES:
            _memo.popitem(last=False)


def recall(kind: str, original, reconstruction, scope: str = ""):
    """The ``kind`` result the server computed for this pair, or None."""
    key = _key(kind, original, reconstruction, scope)
    with _lock:
        return _memo.get(key)
