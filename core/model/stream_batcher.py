"""Decode streams on a GPU through one batched step: the waiting packets of every stream in one turn.

:class:`StreamBatcher` owns a ``core.nn.decode_pool.DecodePool`` (slot pools, one CUDA graph per
batch bucket and packet size). A stream's thread hands it one row (its slot and 1 or 4 frames of
codes) and waits; whichever waiting thread finds no step running gathers the oldest waiting row of
each stream (one per stream, so each stream's frames stay in order), all of the oldest row's frame
count, into one step, takes the engine's lock for that one turn (``Engine.frame_work``: a long job
hands it over between its chunks), and wakes the others. While a step runs the next rows gather, so
N streams cost one step of N rows, not N steps.

Admission: the measured time of each bucket's step (a running mean per bucket and packet size) says
how many streams keep real time: :meth:`StreamBatcher.capacity`.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from core.codec import FRAME_S
from core.nn.decode_pool import DecodePool, bucket_for

logger = logging.getLogger(__name__)

COST_SMOOTHING = 0.05  # weight of the newest step in a bucket's running cost


def pool_wanted(engine) -> bool:
    """Streams share the batched step on a GPU with an fp32 decoder (a guarded bf16 decoder checks
    each stream's chunks on its own)."""
    return bool(engine.settings.is_cuda and engine._fast is not None and not engine._fast.guarded)


def build_batcher(engine, slots: int) -> StreamBatcher:
    """The batched step for ``slots`` streams, built under the engine's lock and decode flags."""
    from core.model.calls import backend_flags

    settings = engine.settings
    with engine.model_work("decode") as (_model, runner):
        capture = settings.live_graphs and settings.is_cuda
        pool = DecodePool(runner.decoder, slots, lambda op: backend_flags(settings, op), capture)
        costs = pool.measure()
    logger.info("decode streams: one batched step for up to %d streams", slots)
    return StreamBatcher(engine, pool, costs)


class _Pending:
    __slots__ = ("slot", "codes", "done", "audio", "error")

    def __init__(self, slot: int, codes: np.ndarray):
        self.slot, self.codes, self.done = slot, codes, False
        self.audio: np.ndarray | None = None
        self.error: BaseException | None = None


class StreamBatcher:
    """The batched decode step shared by every stream of an engine (see the module docstring)."""

    def __init__(self, engine, pool: DecodePool, costs: dict[tuple[int, int], float]):
        self.engine, self.pool = engine, pool
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._stepping = False
        self.cost_s = dict(costs)  # (bucket rows, frames) -> running step time (s)
        self.steps = 0

    # ---- slots -------------------------------------------------------------------------------------
    def open(self) -> int:
        """A reset slot; ``IndexError`` when every slot is in use."""
        with self._cond:
            return self.pool.open()

    def reset(self, slot: int) -> None:
        with self._cond, self.engine.model_work("decode"):
            self.pool.reset(slot)

    def close(self, slot: int) -> None:
        from core.errors import LiveSessionError

        with self._cond:
            for item in self._queue:
                if item.slot == slot:  # its thread gives up waiting
                    item.error, item.done = LiveSessionError("This decode stream has been closed."), True
            self._queue = [p for p in self._queue if p.slot != slot]
            self.pool.close(slot)
            self._cond.notify_all()

    # ---- admission ---------------------------------------------------------------------------------
    def frame_cost_s(self, streams: int) -> float | None:
        """Measured (or, from a smaller bucket, scaled up) model time per frame of each of ``streams``
        streams when every step carries one frame a stream (the dearest way to send codes)."""
        size = bucket_for(max(1, min(streams, self.pool.max_rows)))
        if (size, 1) in self.cost_s:
            return self.cost_s[(size, 1)]
        smaller = [b for b, frames in self.cost_s if frames == 1 and b < size]
        if smaller:  # linear in the rows: an overestimate, batched rows cost far less than that
            base = max(smaller)
            return self.cost_s[(base, 1)] * size / base
        return None

    def capacity(self, limit: int, share: float) -> int:
        """Streams whose steps fit ``share`` of real time, at most ``limit`` and the slots."""
        most = min(limit, self.pool.slots)
        if self.frame_cost_s(1) is None:
            return most
        fits = 1
        for n in range(1, most + 1):
            cost = self.frame_cost_s(n)
            rounds = -(-n // self.pool.max_rows)  # more streams than the largest bucket: several steps a frame
            if cost is None or cost * rounds > share * FRAME_S:
                break
            fits = n
        return fits

    # ---- the step ----------------------------------------------------------------------------------
    def run(self, slot: int, codes: np.ndarray) -> np.ndarray:
        """Audio (T * 1920,) of ``codes`` (T, 16), T 1 or 4, through the next step (this thread's or another's)."""
        item = _Pending(slot, codes)
        with self._cond:
            self._queue.append(item)
            while not item.done:
                if self._stepping:
                    self._cond.wait()
                    continue
                self._stepping = True
                taken = self._take()
                self._cond.release()
                try:
                    self._step(taken)
                finally:
                    self._cond.acquire()
                    self._stepping = False
                    self._cond.notify_all()
        if item.error is not None:
            raise item.error
        assert item.audio is not None
        return item.audio

    def _take(self) -> list[_Pending]:
        frames = self._queue[0].codes.shape[0]
        taken: list[_Pending] = []
        rest: list[_Pending] = []
        seen: set[int] = set()
        for item in self._queue:
            if item.slot in seen or item.codes.shape[0] != frames or len(taken) >= self.pool.max_rows:
                rest.append(item)
            else:
                seen.add(item.slot)
                taken.append(item)
            if item.codes.shape[0] != frames:
                seen.add(item.slot)  # a stream's later rows wait behind its first
        self._queue = rest
        return taken

    def _step(self, taken: list[_Pending]) -> None:
        try:
            with self.engine.frame_work("decode"):
                start = time.perf_counter()
                audio = self.pool.step([p.slot for p in taken], [p.codes for p in taken])
                compute = time.perf_counter() - start
        except BaseException as e:  # every row of the step gets the error, in its own thread
            for p in taken:
                p.error, p.done = e, True
            return
        key = (bucket_for(len(taken)), int(taken[0].codes.shape[0]))
        cost = self.cost_s.get(key)
        self.cost_s[key] = compute if cost is None else cost + COST_SMOOTHING * (compute - cost)
        self.steps += 1
        for i, p in enumerate(taken):
            p.audio, p.done = audio[i], True
