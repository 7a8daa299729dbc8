"""The shared-test store's behaviour, run on SQLite (test_shared_test_store.py) and on a real PostgreSQL
server (tests/core/listening/test_shared_test_postgres.py): one body of checks for both databases."""

from __future__ import annotations

import numpy as np
import pytest

from core.listening import mushra, shared_test_results
from core.listening.shared_test_schema import SharedTestError
from core.listening.shared_test_store import SharedTestStore

CHOSEN = ["reconstruction", "opus6"]
PLAN = mushra.plan(CHOSEN, [(0.0, 2.0)])
AUDIO = {(0, c): np.arange(48_000, dtype=np.int16) % 200 for c in PLAN.conditions}
GOOD = {"original": 97, "lp3.5": 12, "lp7": 35, "reconstruction": 70, "opus6": 45}


def mushra_flow(store: SharedTestStore) -> None:
    link, owner = store.create("mushra", "sha", PLAN.to_dict(), AUDIO)
    assert len(link) >= 32  # 192 bits, url-safe
    keys = [store.join(link, name)[0] for name in ("ann", "bob", "cy")]
    store.rate(link, keys[0], 0, GOOD)
    store.rate(link, keys[1], 0, dict(GOOD, reconstruction=74))
    store.rate(link, keys[2], 0, dict(GOOD, original=40))  # fails screening
    with pytest.raises(SharedTestError, match="already sent") as replay:
        store.rate(link, keys[0], 0, dict(GOOD, reconstruction=0))  # nobody changes a screen once sent
    assert replay.value.reason == "replay"
    got = store.responses(link, owner)
    assert [x["nickname"] for x in got["listeners"]] == ["ann", "bob", "cy"]
    pooled = shared_test_results.pool_mushra(PLAN.conditions, got["ratings"])
    assert (pooled.listeners, pooled.kept) == (3, 2)
    assert next(r for r in pooled.conditions if r.condition == "reconstruction").ci.mean == 72
    assert np.array_equal(store.audio(link, 0, "opus6"), AUDIO[(0, "opus6")])
    with pytest.raises(SharedTestError, match="owner") as other:
        store.responses(link, keys[0])  # a listener's key is not the owner's
    assert other.value.reason == "forbidden"
    store.close(link, owner)
    with pytest.raises(SharedTestError, match="closed"):
        store.join(link, "late")
    with pytest.raises(SharedTestError, match="closed"):
        store.rate(link, keys[0], 0, GOOD)
    assert len(store.responses(link, owner)["ratings"]) == 15  # closing keeps every answer


def abx_flow(store: SharedTestStore) -> None:
    link, owner = store.create("abx", "sha", {"a_source": "original", "b_source": "k2", "trials": 4}, {})
    keys = [store.join(link)[0] for _ in range(2)]
    for key in keys:
        info, who = store.listener(link, key)
        plan = store.abx_plan(info, who)
        for trial, x in enumerate(plan):
            assert store.answer_abx(link, key, trial, x) == trial + 1
        with pytest.raises(SharedTestError, match="every trial"):
            store.answer_abx(link, key, 0, "A")
    got = store.responses(link, owner)
    pooled = shared_test_results.pool_abx(got["answers"])
    assert (pooled.correct, pooled.trials) == (8, 8)
    assert pooled.p_value == pytest.approx(1 / 256)


def limits_flow(make_db) -> None:
    """Two limit counters on one database (two replicas) share every limit: call by call, over the
    sliding minute, and when both count at once (the last call cannot be taken twice)."""
    import threading

    from core.listening.shared_test_limits import SharedTestLimits

    now = [60_050.0]  # 50 s into a minute
    replicas = [SharedTestLimits(make_db(), clock=lambda: now[0]) for _ in range(2)]
    assert [r.allow("answers of ann in t", 4) for r in replicas * 3] == [True] * 4 + [False] * 2
    assert replicas[1].allow("answers of bob in t", 4)  # another bucket counts apart
    now[0] = 60_090.0  # the next minute, half through: half of the last minute's 4 still count
    assert [r.allow("answers of ann in t", 4) for r in replicas * 2] == [True, True, False, False]
    now[0] = 60_170.0  # two minutes on: what is left of the window holds none of them
    assert all(replicas[0].allow("answers of ann in t", 4) for _ in range(4))

    allowed: list[bool] = []

    def hammer(limits: SharedTestLimits) -> None:
        for _ in range(10):
            allowed.append(limits.allow("answers of cy in t", 15))

    threads = [threading.Thread(target=hammer, args=(r,)) for r in replicas * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(allowed) == 40 and allowed.count(True) == 15
