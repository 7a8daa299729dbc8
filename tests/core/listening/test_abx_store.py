"""Issue 19, finding 7: the blind-test database recovers. Deleted while serving: recreated;
damaged: moved aside and made anew, the fault said by ``store_problem`` (for /ready and the doctor);
locked: calls refused within the busy timeout, and starting a test touches no file at all.
Finding 8: sessions expire. Finding 13: tokens that cannot be tokens are refused in words."""

from __future__ import annotations

import sqlite3
import time

import pytest

from core.listening import abx, abx_db, abx_store


def _answer_all(store: abx_store.AbxStore, token: str, first: abx_store.Trial) -> None:
    trial: abx_store.Trial | None = first
    while trial is not None:
        trial = store.answer(token, trial.index, "A")


def test_a_database_deleted_while_serving_is_recreated(tmp_path):
    store = abx_store.AbxStore(tmp_path)
    token, first = store.start("a" * 64, "reconstruction", trials=2, seed=1)
    store.answer(token, 0, "A")
    for name in (abx_db.DB_NAME, abx_db.DB_NAME + "-wal", abx_db.DB_NAME + "-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    fresh, trial = store.start("b" * 64, "reconstruction", trials=2, seed=2)
    _answer_all(store, fresh, trial)  # was: "no such table: sessions" until a restart
    assert store.results(fresh).trials == 2
    with pytest.raises(abx.AbxError, match="unknown here"):  # the deleted session is gone, said in words
        store.answer(token, 1, "A")


def test_a_damaged_database_is_moved_aside_and_the_fault_is_reported(tmp_path):
    store = abx_store.AbxStore(tmp_path)
    token, trial = store.start("a" * 64, "reconstruction", trials=1, seed=1)
    _answer_all(store, token, trial)
    assert abx_db.store_problem(tmp_path) is None
    for name in (abx_db.DB_NAME + "-wal", abx_db.DB_NAME + "-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    (tmp_path / abx_db.DB_NAME).write_bytes(b"this is not SQLite " * 500)
    assert "damaged" in abx_db.store_problem(tmp_path)  # /ready and the doctor see it
    fresh, trial = store.start("b" * 64, "reconstruction", trials=1, seed=2)
    _answer_all(store, fresh, trial)  # the first call repairs it
    assert store.results(fresh).trials == 1
    assert abx_db.store_problem(tmp_path) is None
    kept = list(tmp_path.glob(abx_db.DB_NAME + ".damaged-*"))
    assert kept and kept[0].read_bytes().startswith(b"this is not SQLite")  # nothing thrown away


def test_a_locked_database_is_refused_quickly_and_start_never_waits_for_it(tmp_path):
    store = abx_store.AbxStore(tmp_path, busy_timeout_s=0.3)
    token, trial = store.start("a" * 64, "reconstruction", trials=3, seed=1)
    store.answer(token, 0, "A")
    holder = sqlite3.connect(tmp_path / abx_db.DB_NAME)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        other, _ = store.start(
            "b" * 64, "reconstruction", trials=3, seed=2
        )  # no file touched: the model queue never waits
        assert time.monotonic() - started < 0.1
        started = time.monotonic()
        with pytest.raises(abx.AbxError, match="busy"):
            store.answer(token, 1, "A")
        assert time.monotonic() - started < 2.0
        assert "busy" in abx_db.store_problem(tmp_path, timeout_s=0.1)
    finally:
        holder.rollback()
        holder.close()
    assert store.answer(token, 1, "A").index == 2 and store.answer(other, 0, "B").index == 1


def test_sessions_expire(tmp_path):
    now = [1000.0]
    store = abx_store.AbxStore(tmp_path, clock=lambda: now[0], session_ttl_s=60.0)
    token, _trial = store.start("a" * 64, "reconstruction", trials=3, seed=1)
    store.answer(token, 0, "A")
    now[0] += 61
    with pytest.raises(abx.AbxError, match="expired"):
        store.answer(token, 1, "A")
    idle, _ = store.start("b" * 64, "reconstruction", trials=3, seed=2)
    now[0] += 61
    store.start("c" * 64, "reconstruction", trials=3, seed=3)  # forgets the unanswered ones past the limit
    with pytest.raises(abx.AbxError, match="unknown here"):
        store.current(idle)


@pytest.mark.parametrize("token", [None, "", "\ud800" * 43, "x" * 5000, 12345, "a b" * 20])
def test_anything_that_cannot_be_a_token_is_refused_in_words(tmp_path, token):
    store = abx_store.AbxStore(tmp_path)
    with pytest.raises(abx.AbxError):
        store.current(token)
    with pytest.raises(abx.AbxError):
        store.answer(token, 0, "A")


def test_an_unwritable_data_folder_is_a_problem(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert "cannot be created" in abx_db.store_problem(blocker / "data")
