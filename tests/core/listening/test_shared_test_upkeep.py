"""Shared tests do not fill the disk (``core.listening.shared_test_upkeep``): at most N tests per
visitor and so many bytes of audio in all, refused in words; a closed or expired test's audio is
deleted a stated time later and the SQLite file compacted, its answers kept. Before, every test's
audio (up to about 26 MB) was kept for ever, with no cap."""

from __future__ import annotations

import numpy as np
import pytest

from core.listening import shared_test_db, shared_test_upkeep
from core.listening.shared_test_schema import SharedTestError
from core.listening.shared_test_store import SharedTestStore

PLAN = {"a_source": "original", "b_source": "reconstruction", "trials": 2}


def _audio(seconds: float) -> dict:
    rng = np.random.default_rng(0)
    n = int(seconds * 24_000)
    return {(0, s): rng.integers(-9000, 9000, n).astype(np.int16) for s in ("original", "reconstruction")}


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _store(tmp_path, clock=None) -> SharedTestStore:
    return SharedTestStore(shared_test_db.Database(tmp_path), clock=clock or Clock())


def test_a_visitor_keeps_at_most_n_tests_and_is_told_what_to_do(tmp_path):
    store = _store(tmp_path)
    store.upkeep.per_visitor = 2
    for _ in range(2):
        store.create("abx", "sha", PLAN, _audio(0.1), visitor="203.0.113.5")
    with pytest.raises(SharedTestError, match="at most 2.*close one") as refused:
        store.create("abx", "sha", PLAN, _audio(0.1), visitor="203.0.113.5")
    assert refused.value.reason == "full"
    store.create("abx", "sha", PLAN, _audio(0.1), visitor="203.0.113.6")  # another visitor is not counted with them


def test_the_audio_of_all_tests_together_is_capped(tmp_path):
    store = _store(tmp_path)
    store.upkeep.total_bytes = 300_000
    store.create("abx", "sha", PLAN, _audio(2.0), visitor="a")  # 192,000 bytes
    with pytest.raises(SharedTestError, match="MiB of shared tests' audio"):
        store.create("abx", "sha", PLAN, _audio(2.0), visitor="b")


@pytest.mark.parametrize("ending", ["closed", "expired"])
def test_a_finished_tests_audio_is_deleted_a_stated_time_later_and_the_file_compacted(tmp_path, ending):
    clock = Clock()
    store = _store(tmp_path, clock)
    store.upkeep.per_visitor = 1
    link, owner = store.create("abx", "sha", PLAN, _audio(30.0), ttl_s=3600, visitor="a")
    key, _ = store.join(link, "ann")
    store.answer_abx(link, key, 0, "A")
    if ending == "closed":
        store.close(link, owner)
    else:
        clock.now += 3600
    size = sum(p.stat().st_size for p in tmp_path.glob(shared_test_db.DB_NAME + "*"))
    clock.now += shared_test_upkeep.KEEP_AUDIO_S - 10
    assert store.upkeep.sweep() == 0  # not yet
    clock.now += 20
    assert store.upkeep.sweep() == 1
    with store.db.connect() as c:
        assert c.execute("SELECT COUNT(*) FROM room_audio").fetchone()[0] == 0
    after = sum(p.stat().st_size for p in tmp_path.glob(shared_test_db.DB_NAME + "*"))
    assert after < size / 4, (size, after)  # 2.9 MB of audio gone from the disk, the WAL truncated
    assert len(store.responses(link, owner)["answers"]) == 1  # the answers stay readable
    store.create("abx", "sha", PLAN, _audio(0.1), visitor="a")  # its place is free again
