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


def _session_and_job(lock: TurnLock, say_pending: bool) -> list[str]:
    """A session that fell behind (five frames queued; between two frames its thread is away 30 ms, as a
    socket's worker hops through the event loop) beside a job of 20 ms chunks; the order they ran in."""
    order: list[str] = []
    started = threading.Event()
    key = object()

    def job():
        with lock:
            started.set()
            for i in range(30):
                time.sleep(0.02)
                order.append(f"chunk {i}")
                lock.give_turn()

    t = threading.Thread(target=job)
    t.start()
    started.wait()
    for i in range(5):
        if say_pending:  # as a socket says it after each push while blocks wait
            lock.pending(key, True)
        with lock.turn():
            order.append(f"frame {i}")
            time.sleep(0.005)
        if say_pending and i == 4:
            lock.pending(key, False)  # caught up
        time.sleep(0.03)
    t.join()
    return order


def test_a_pending_session_catches_up_on_all_its_frames_before_the_job_goes_on():
    frames = [f"frame {i}" for i in range(5)]
    order = _session_and_job(TurnLock(), say_pending=True)
    first = order.index("frame 0")
    assert order[first : first + 5] == frames, order  # no chunk of the job between them
    # without saying so, the job takes the lock back between two frames (why ``pending`` exists)
    order = _session_and_job(TurnLock(), say_pending=False)
    first = order.index("frame 0")
    assert order[first : first + 5] != frames, order


def test_a_session_that_stops_saying_it_is_behind_holds_a_job_back_no_longer_than_it_said(monkeypatch):
    from core.model import turns

    monkeypatch.setattr(turns, "PENDING_S", 0.1)
    monkeypatch.setattr(turns, "GIVE_TURN_MAX_S", 0.6)
    lock = TurnLock()
    lock.pending("stalled", True)  # said once, then its thread stalled (a page that stopped reading)
    with lock:
        began = time.perf_counter()
        lock.give_turn()
        held_back = time.perf_counter() - began
    assert lock.given == 1 and 0.09 <= held_back < 0.3, held_back
    stop = threading.Event()

    def keeps_saying():  # a session that stays behind says it after every push
        while not stop.is_set():
            lock.pending("behind", True)
            time.sleep(0.02)

    t = threading.Thread(target=keeps_saying)
    t.start()
    try:
        with lock:
            began = time.perf_counter()
            lock.give_turn()
            held_back = time.perf_counter() - began
    finally:
        stop.set()
        t.join()
    assert 0.55 <= held_back < 1.2, held_back  # held back to the bound: live cannot starve a job
    lock.pending("behind", False)
    with lock:
        lock.give_turn()
    assert lock.given == 2  # nothing pending, nobody waiting: no hand-over
