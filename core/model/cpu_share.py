"""Batch work gives the CPU to live sessions: its threads run at a lower priority while one is open.

A live session on a CPU needs a slice of one core every 80 ms, on time. The engine's lock already
hands the model to live frames between a job's chunks (``core.model.turns``), so the job's model work
never runs beside a frame. Its work outside the lock does: reading and resampling an upload, the
reference codecs, the WAVs and figures, the metrics and their models. On the 2-core machine that
work stretched a live frame from ≈20 ms to hundreds (a thread that keeps the interpreter busy is the
worst: every torch op of a frame gives the interpreter up and must win it back), and a session
beside a 10-minute round trip fell 3 s behind real time; at a lower priority the same work leaves
the frames at their own cost (docs/live.md; ``python -m bench.live_beside_job`` measures it).

The rule: each piece of batch work outside the lock runs through :meth:`CpuShare.batch`, in a thread
of its own that ends with it (``core.model.torch_threads.in_passing_thread``: the caller's torch
thread count and context variables). While any live session is open that thread runs at
``BATCH_NICE`` (Linux's per-thread nice), set when it starts or when a session opens during it; its
OpenMP helpers, started after, inherit it. Without privileges a thread can lower its priority but
never raise it back, which is why a piece runs in a thread that ends and not in the web server's
long-lived workers. The model work under the lock keeps the caller's priority: a live frame may wait
for it, and it must not wait behind other programs. On other systems ``batch`` only runs the work.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from core.model import torch_threads

logger = logging.getLogger(__name__)

T = TypeVar("T")

BATCH_NICE = 10  # nice of batch threads while a live session is open (weight ≈1/9 of a normal thread's)
PER_THREAD_NICE = sys.platform.startswith("linux")  # elsewhere setpriority on a thread id names a process


class CpuShare:
    """Which threads do batch work, and their priority while live sessions are open (module docstring).
    ``live_in_use()``: how many live sessions are open now."""

    def __init__(self, live_in_use: Callable[[], int]) -> None:
        self._live_in_use = live_in_use
        self._guard = threading.Lock()
        self._batch: set[int] = set()  # native ids of the threads running batch work now
        self.lowered = 0  # threads whose priority was lowered, ever (tests, logs)

    def batch(self, fn: Callable[..., T], *args) -> T:
        """``fn(*args)`` as batch work: in a thread of its own, at ``BATCH_NICE`` while a live session
        is open; its result or exception here."""

        def run() -> T:
            tid = threading.get_native_id()
            with self._guard:
                self._batch.add(tid)
            try:
                if self._live_in_use():
                    self._lower(tid)
                return fn(*args)
            finally:
                with self._guard:
                    self._batch.discard(tid)

        return torch_threads.in_passing_thread(run, name="batch-cpu")

    def live_opened(self) -> None:
        """A live session opened: every thread running batch work now goes to ``BATCH_NICE``."""
        with self._guard:
            running = list(self._batch)
        for tid in running:
            self._lower(tid)

    def _lower(self, tid: int) -> None:
        if not PER_THREAD_NICE:
            return
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < BATCH_NICE:
                os.setpriority(os.PRIO_PROCESS, tid, BATCH_NICE)
                self.lowered += 1
        except OSError as e:  # the thread ended meanwhile, or the system refuses: the work runs as it is
            logger.debug("batch thread %d keeps its priority: %s", tid, e)
