"""A shared test's sounds as a listener fetches them: which sound a handle is, its WAV, byte ranges,
and the record of what was fetched (``core.listening.shared_test_fetches``).

A handle names a sound of the listener's own screen (MUSHRA) or current trial (ABX) only; a closed or
expired test serves none (the store refuses). The dithered WAV of a handle is the same bytes every
time (the dither is seeded by the handle), so it is made once, off the event loop, and kept in a
small cache (:data:`CACHE_BYTES` in all, per process): the player reads each file in byte ranges,
and 20 parallel requests from one listener each rebuilt the whole WAV on the event loop before
(``/health`` went from 8 ms to 0.59 s). The requests are metered per listener and per address
(``webui.serving.shared_test_routes``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from fastapi import Request
from fastapi.responses import Response

from core.listening import mushra
from core.listening.shared_test_store import SharedTestStore
from core.units import MIB
from webui import i18n
from webui.jobs import shared_test

CACHE_BYTES = 64 * MIB  # dithered WAVs kept per process (a 60 s sound is about 2.9 MB)
NO_STORE = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


class NoSound(i18n.TranslatedError):
    """A handle that names no sound of this listener's screen or trial: its HTTP status and a catalogue key."""

    def __init__(self, status: int, key: str):
        self.status = status
        super().__init__(key)


class WavCache:
    """(test, handle) -> WAV bytes, the least recently used dropped past ``limit_bytes``; thread-safe."""

    def __init__(self, limit_bytes: int = CACHE_BYTES):
        self.limit_bytes = limit_bytes
        self._items: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> bytes | None:
        with self._lock:
            data = self._items.get(key)
            if data is not None:
                self._items.move_to_end(key)
            return data

    def put(self, key: tuple[str, str], data: bytes) -> None:
        with self._lock:
            if key in self._items or len(data) > self.limit_bytes:
                return
            self._items[key] = data
            self._bytes += len(data)
            while self._bytes > self.limit_bytes:
                _k, old = self._items.popitem(last=False)
                self._bytes -= len(old)


def sound(store: SharedTestStore, cache: WavCache, link: str, key: str, handle: str) -> bytes:
    """The WAV behind a handle of this listener's screen or current trial; its first fetch recorded.
    Blocking (database, dither): call it off the event loop."""
    if not (len(handle) == shared_test.HANDLE_CHARS and all(c in "0123456789abcdef" for c in handle)):
        raise NoSound(404, "listen.no_sound")
    info, who = store.serving(link, key)  # a closed or expired test: refused in words
    item, heard, source = _which(store, info, who, link, key, handle)
    store.fetches.record(info.test, who.listener, item, heard)
    data = cache.get((info.test, handle))
    if data is None:
        steps = store.audio(link, 0 if info.kind == "abx" else item, source)
        data = shared_test.listener_wav(steps, handle, shared_test.test_rate(info))
        cache.put((info.test, handle), data)
    return data


def _which(store: SharedTestStore, info, who, link: str, key: str, handle: str) -> tuple[int, str, str]:
    """(screen or trial, the sound as the fetch record names it, the stored source id) of a handle."""
    if info.kind == "mushra":
        plan = mushra.Plan.from_dict(info.plan)
        for screen in range(len(plan.items)):
            slots = shared_test.mushra_slots(info.seed, who.listener, screen, plan.conditions)
            if handle in slots:
                condition = slots[handle]
                return screen, condition, "original" if condition == "reference" else condition
        raise NoSound(404, "listen.no_sound")
    trial = store.abx_done(link, key)
    plan_x = store.abx_plan(info, who)
    if trial >= len(plan_x):
        raise NoSound(409, "listen.all_answered")
    names = [shared_test.handle(info.seed, who.listener, trial, slot) for slot in range(3)]
    if handle not in names:
        raise NoSound(404, "listen.no_sound")
    slot = "ABX"[names.index(handle)]
    which = slot if slot != "X" else plan_x[trial]
    return trial, slot, info.plan["a_source"] if which == "A" else info.plan["b_source"]


def ranged(request: Request, data: bytes) -> Response:
    """``data`` whole or the byte range asked for (the player reads WAVs in blocks)."""
    headers = {**NO_STORE, "Accept-Ranges": "bytes", "Content-Type": "audio/wav"}
    size = len(data)
    spec = request.headers.get("range", "")
    if request.method == "HEAD":
        return Response(b"", headers={**headers, "Content-Length": str(size)})
    if spec.startswith("bytes="):
        first, _, last = spec[6:].partition("-")
        try:
            start = int(first) if first else max(0, size - int(last))
            end = min(int(last), size - 1) if first and last else size - 1
        except ValueError:
            start, end = size, size
        if not 0 <= start <= end < size:
            return Response(b"", status_code=416, headers={**headers, "Content-Range": f"bytes */{size}"})
        return Response(
            data[start : end + 1], status_code=206, headers={**headers, "Content-Range": f"bytes {start}-{end}/{size}"}
        )
    return Response(data, headers=headers)
