"""core.model.cpu_share: batch work runs at a lower priority while a live session is open, in a thread of
its own (the caller, which does the model work under the lock, keeps its priority), with the caller's
context; real threads and Linux's per-thread nice, read back from the system."""

from __future__ import annotations

import contextvars
import os
import threading

import pytest

from core.codec import SAMPLE_RATE
from core.model import cpu_share

pytestmark = pytest.mark.skipif(not cpu_share.PER_THREAD_NICE, reason="per-thread nice is Linux's")


def nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_batch_work_is_lowered_only_while_a_live_session_is_open(tiny_engine):
    share, base = tiny_engine.live.cpu, nice()
    lowered = max(base, cpu_share.BATCH_NICE)
    assert share.batch(nice) == base  # no session: as the caller
    with tiny_engine.live.open(SAMPLE_RATE):
        assert share.batch(nice) == lowered
        assert nice() == base  # the caller keeps its priority (it runs the model work under the lock)
    assert share.batch(nice) == base  # a new thread each time: the lowered one has ended


def test_a_session_that_opens_during_batch_work_lowers_it(tiny_engine):
    share, started, go, seen = tiny_engine.live.cpu, threading.Event(), threading.Event(), {}

    def work() -> tuple[int, int]:
        before = nice()
        started.set()
        assert go.wait(30)
        return before, nice()

    job = threading.Thread(target=lambda: seen.update(nices=share.batch(work)))
    job.start()
    assert started.wait(30)
    with tiny_engine.live.open(SAMPLE_RATE):
        go.set()
        job.join(30)
    before, after = seen["nices"]
    assert before < cpu_share.BATCH_NICE and after == cpu_share.BATCH_NICE


def test_batch_work_sees_the_callers_context_and_its_errors_reach_the_caller(tiny_engine):
    var = contextvars.ContextVar("reporter")
    var.set("the page's progress bar")
    assert tiny_engine.live.cpu.batch(var.get) == "the page's progress bar"

    def broken():
        raise ValueError("unreadable")

    with pytest.raises(ValueError, match="unreadable"):
        tiny_engine.live.cpu.batch(broken)
