"""Shared tests on the default SQLite file (issue 28): the flows, bad input, expiry, restarts."""

from __future__ import annotations

import math

import pytest
from shared_test_cases import AUDIO, GOOD, PLAN, abx_flow, mushra_flow

from core.listening import shared_test_db
from core.listening.shared_test_schema import SharedTestError
from core.listening.shared_test_store import SharedTestStore


@pytest.fixture
def store(tmp_path) -> SharedTestStore:
    return SharedTestStore(shared_test_db.Database(tmp_path))


def test_mushra_flow_on_sqlite(store):
    mushra_flow(store)


def test_abx_flow_on_sqlite(store):
    abx_flow(store)


def test_a_restart_loses_nothing(tmp_path):
    first = SharedTestStore(shared_test_db.Database(tmp_path))
    link, owner = first.create("mushra", "sha", PLAN.to_dict(), AUDIO)
    key, _ = first.join(link, "ann")
    first.rate(link, key, 0, GOOD)
    again = SharedTestStore(shared_test_db.Database(tmp_path))  # a new process on the same file
    assert len(again.responses(link, owner)["ratings"]) == len(GOOD)
    assert again.rated_items(link, key) == {0}


@pytest.mark.parametrize(
    ("ratings", "words"),
    [
        (dict(GOOD, opus6=101), "whole number from 0 to 100"),
        (dict(GOOD, opus6=-3), "whole number from 0 to 100"),
        (dict(GOOD, opus6=math.nan), "whole number from 0 to 100"),
        (dict(GOOD, opus6="x"), "whole number from 0 to 100"),
        ({**GOOD, "mp3": 50}, "every sound"),  # a condition id the test does not have
        ({k: v for k, v in GOOD.items() if k != "lp7"}, "every sound"),
    ],
)
def test_bad_ratings_are_refused_in_words_and_nothing_is_written(store, ratings, words):
    link, owner = store.create("mushra", "sha", PLAN.to_dict(), AUDIO)
    key, _ = store.join(link)
    with pytest.raises(Exception, match=words):
        store.rate(link, key, 0, ratings)
    assert store.responses(link, owner)["ratings"] == []
    store.rate(link, key, 0, GOOD)  # and the right answer still goes in


def test_a_screen_that_is_not_in_the_test_and_an_unjoined_listener_are_refused(store):
    link, _owner = store.create("mushra", "sha", PLAN.to_dict(), AUDIO)
    key, _ = store.join(link)
    with pytest.raises(SharedTestError, match="not in this test"):
        store.rate(link, key, 1, GOOD)
    with pytest.raises(SharedTestError, match="not joined") as e:
        store.rate(link, "A" * 32, 0, GOOD)
    assert e.value.reason == "forbidden"
    for bad in (None, "", "short", "../../etc/passwd", "\ud800" * 30):
        with pytest.raises(SharedTestError, match="not valid"):
            store.open_test(bad)


def test_an_expired_test_says_so(tmp_path):
    now = [1000.0]
    store = SharedTestStore(shared_test_db.Database(tmp_path), clock=lambda: now[0])
    link, _owner = store.create("mushra", "sha", PLAN.to_dict(), AUDIO, ttl_s=3600)
    key, _ = store.join(link)
    now[0] += 3601
    with pytest.raises(SharedTestError, match="expired") as e:
        store.rate(link, key, 0, GOOD)
    assert e.value.reason == "expired" and store.open_test(link).state(now[0]) == "expired"


def test_links_are_long_random_and_only_their_hash_is_stored(tmp_path):
    store = SharedTestStore(shared_test_db.Database(tmp_path))
    links = {
        store.create("abx", "sha", {"a_source": "original", "b_source": "k2", "trials": 2}, {})[0] for _ in range(20)
    }
    assert len(links) == 20 and min(len(x) for x in links) >= 32
    data = b"".join(p.read_bytes() for p in tmp_path.glob(shared_test_db.DB_NAME + "*"))
    assert data
    assert not any(link.encode() in data for link in links)


def test_a_database_url_that_is_not_postgresql_is_refused():
    with pytest.raises(shared_test_db.SharedTestDbError, match="postgresql://"):
        shared_test_db.Database(url="mysql://x")


def test_the_operator_exports_every_shared_test_by_id(tmp_path, cli):
    store = SharedTestStore(shared_test_db.Database(tmp_path / "data"))
    link, _owner = store.create("mushra", "sha", PLAN.to_dict(), AUDIO)
    key, _ = store.join(link, "ann")
    store.rate(link, key, 0, GOOD)
    abx_link, _ = store.create("abx", "sha", {"a_source": "original", "b_source": "k2", "trials": 2}, {})
    abx_key, _ = store.join(abx_link)
    store.answer_abx(abx_link, abx_key, 0, "A")
    out = tmp_path / "all.csv"
    done = cli("listening-export", "-o", out, "--data-dir", tmp_path / "data")
    assert done.returncode == 0 and "6 rows" in done.stdout
    rows = out.read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("test,kind,listener,nickname,item,condition,rating")
    assert sum(",mushra,L1,ann,0," in r for r in rows) == 5 and sum(",abx,L1,," in r for r in rows) == 1
    assert link not in out.read_text() and "Opus" not in out.read_text()  # ids, never links or labels
    assert cli("listening-export", "-o", out, "--data-dir", tmp_path / "data").returncode != 0  # never overwrites
