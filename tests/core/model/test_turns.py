"""The engine's lock (core.model.turns): re-entrant for jobs, handed to waiting short turns between
a job's chunks, and never handed over when nobody waits."""

from __future__ import annotations

import threading
import time

from core.model.turns import TurnLock


def test_a_waiting_turn_gets_the_lock_between_two_chunks_of_a_nested_job():
    lock = TurnLock()
    order: list[str] = []
    chunk_s = 0.05
    started = threading.Event()

    def job():
        with lock, lock:  # nested, as a round trip holds it around its encode and decode
            started.set()
            for i in range(10):
                time.sleep(chunk_s)
                order.append(f"chunk {i}")
                lock.give_turn()

    t = threading.Thread(target=job)
    t.start()
    started.wait()
    asked = time.perf_counter()
    with lock.turn() as (waited, blocker):
        order.append("turn")
        assert lock.holder == "live"
    assert blocker == "job"
    assert time.perf_counter() - asked < 3 * chunk_s  # at most about one chunk, not the whole job
    t.join()
    assert order.index("turn") < 3 and len(order) == 11
    assert lock.given == 1  # handed over once: when the turn waited, not at every chunk
    assert lock.holder is None and lock.acquire(blocking=False)  # the job left at its full depth
    lock.release()


def test_give_turn_without_the_lock_or_without_waiters_does_nothing():
    lock = TurnLock()
    lock.give_turn()
    with lock:
        lock.give_turn()
    assert lock.given == 0
