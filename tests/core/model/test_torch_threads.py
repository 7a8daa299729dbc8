"""core.model.torch_threads: a passing thread's OpenMP pool ends with it, the sessions' one thread
runs every live session's model work on a CPU, and both take their caller's torch thread count."""

from __future__ import annotations

import os
import threading
import time

import pytest
import torch

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.model.torch_threads import OneThread, in_passing_thread

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")


def _threads_after(settle_s: float, expected: int | None = None) -> int:
    """The process's thread count, once it stops changing (or equals ``expected``) within ``settle_s``."""
    deadline, count = time.monotonic() + settle_s, len(os.listdir("/proc/self/task"))
    while time.monotonic() < deadline and count != expected:
        time.sleep(0.05)
        count = len(os.listdir("/proc/self/task"))
    return count


@pytest.fixture
def two_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def _parallel_op() -> None:
    torch.sin(torch.ones(1 << 22))  # far past ATen's grain size: a parallel region on 2 threads


def test_a_passing_threads_pool_ends_with_it_and_a_living_threads_does_not(two_threads):
    before = _threads_after(0.2)
    in_passing_thread(_parallel_op)
    assert _threads_after(2.0, before) == before  # nothing of it is left

    stop = threading.Event()
    ran = threading.Event()
    living = threading.Thread(target=lambda: (_parallel_op(), ran.set(), stop.wait()), daemon=True)
    living.start()
    ran.wait(10)
    try:
        assert _threads_after(0.5) >= before + 2  # the thread and its pool's helper: what the rule avoids
    finally:
        stop.set()
        living.join()


def test_a_passing_thread_returns_raises_and_takes_the_callers_thread_count(two_threads):
    assert in_passing_thread(lambda a, b: a + b, 2, 3) == 5
    with pytest.raises(ValueError, match="broken"):
        in_passing_thread(lambda: (_ for _ in ()).throw(ValueError("broken")))
    torch.set_num_threads(1)
    assert in_passing_thread(torch.get_num_threads) == 1


def test_one_thread_runs_every_call_on_the_same_thread_in_turn(two_threads):
    runner, seen = OneThread("test-one"), []
    callers = [threading.Thread(target=lambda: seen.append(runner.call(threading.get_ident))) for _ in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert len(set(seen)) == 1 and seen[0] not in {t.ident for t in callers}
    assert runner.call(lambda: runner.call(lambda: 7)) == 7  # a call from the thread itself runs at once
    torch.set_num_threads(1)
    assert runner.call(torch.get_num_threads) == 1  # the caller's count, set after the thread started


def test_live_sessions_on_a_cpu_do_their_model_work_on_the_one_thread(tiny_engine, speech, monkeypatch):
    # two sessions at once whatever an earlier test measured on a loaded machine (CI: 86 ms a frame
    # admitted one): admission is tests/core/model/test_live.py's subject, not this test's
    monkeypatch.setattr(tiny_engine.live, "frame_cost_s", None)
    names: list[str] = []
    sessions = [tiny_engine.live.open(SAMPLE_RATE, paced=False) for _ in range(2)]
    for session in sessions:
        push = session.encoder.push

        def recording(piece, push=push):
            names.append(threading.current_thread().name)
            return push(piece)

        session.encoder.push = recording
    x = speech(0.5)

    def feed(session):
        for low in range(0, x.size, SAMPLES_PER_FRAME):
            session.push(x[low : low + SAMPLES_PER_FRAME])
        session.finish()

    feeders = [threading.Thread(target=feed, args=(s,)) for s in sessions]
    for t in feeders:
        t.start()
    for t in feeders:
        t.join()
    assert names and all(n.startswith("live-cpu") for n in names), set(names)
