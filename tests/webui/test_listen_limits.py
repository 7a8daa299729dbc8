"""The shared tests' limits (webui.serving.shared_test_routes) key on the client's address as the trusted
proxies name it, and are counted in the shared tests' database, so two replicas on one database share them.
The routes run in process (Starlette's test client sets the peer's address); the replicas behind a
real nginx share them too (tests/service/test_service_replicas.py)."""

from __future__ import annotations

import numpy as np
from fastapi import FastAPI
from starlette.testclient import TestClient

from core.listening import shared_test_db
from core.listening.shared_test_store import SharedTestStore
from webui.serving.shared_test_routes import shared_test_routes

PROXY = "10.0.0.2"  # the operator's --trusted-proxies
STRANGER = "198.51.100.7"  # a peer that is no trusted proxy
PER_MIN = 3  # answers per listener (here: per address, no listener cookie) and minute


def _replica(data_dir) -> tuple[TestClient, TestClient, SharedTestStore]:
    """One replica on the shared tests' database in ``data_dir``: (a client through the proxy, a stranger, its store)."""
    store = SharedTestStore(shared_test_db.Database(data_dir))
    app = FastAPI()
    app.router.routes.extend(
        shared_test_routes(store, frozenset({PROXY}), answers_per_min=PER_MIN, joins_per_min=PER_MIN)
    )
    return TestClient(app, client=(PROXY, 40000)), TestClient(app, client=(STRANGER, 40000)), store


def _link(store: SharedTestStore) -> str:
    plan = {"a_source": "original", "b_source": "reconstruction", "trials": 4}
    audio = {(0, s): np.zeros(2400, dtype=np.int16) for s in ("original", "reconstruction")}
    return store.create("abx", "sha", plan, audio)[0]


def _answer(client: TestClient, link: str, forwarded: str | None = None, real_ip: str | None = None) -> int:
    """An answer without a listener cookie: refused as "not joined" (403) once the limit lets it by, else 429."""
    headers = {k: v for k, v in (("X-Forwarded-For", forwarded), ("X-Real-IP", real_ip)) if v}
    return client.post(f"/listen/{link}/abx", json={"trial": 0, "answer": "A"}, headers=headers).status_code


def test_a_spoofed_forwarded_for_from_an_untrusted_peer_does_not_escape_the_limit(tmp_path):
    _proxied, stranger, store = _replica(tmp_path)
    link = _link(store)
    got = [_answer(stranger, link, forwarded=f"203.0.113.{i}", real_ip=f"192.0.2.{i}") for i in range(PER_MIN + 2)]
    assert got == [403] * PER_MIN + [429, 429]


def test_clients_behind_a_trusted_proxy_are_counted_apart_and_cannot_pick_their_address(tmp_path):
    proxied, _stranger, store = _replica(tmp_path)
    link = _link(store)
    # nginx appends the address it saw; what a client wrote into the header itself stands left of it
    ann = [_answer(proxied, link, forwarded=f"192.0.2.{i}, 203.0.113.1") for i in range(PER_MIN + 1)]
    assert ann == [403] * PER_MIN + [429]
    assert _answer(proxied, link, forwarded="203.0.113.2") == 403  # another client: not counted as the proxy
    assert _answer(proxied, link, forwarded="garbage, 203.0.113.1") == 429  # nothing left of ann's address is read


def test_two_replicas_on_one_database_share_the_limit(tmp_path):
    first, _s1, store = _replica(tmp_path)
    second, _s2, _store = _replica(tmp_path)  # another process's routes: its own objects, the same file
    link = _link(store)
    got = [_answer(replica, link, forwarded="203.0.113.5") for replica in (first, second) * PER_MIN]
    assert got == [403] * PER_MIN + [429] * PER_MIN
    joins = [replica.post(f"/listen/{link}/join", json={}).status_code for replica in (first, second) * 2]
    assert joins == [200] * PER_MIN + [429]  # joins too: per address and test, across replicas


def test_the_client_is_read_from_the_right_of_forwarded_for_and_only_from_trusted_proxies():
    from webui.serving.throttle import client_key

    def scope(peer: str, *headers: tuple[bytes, bytes]) -> dict:
        return {"client": (peer, 1), "headers": list(headers)}

    trusted = frozenset({PROXY, "10.0.0.3"})
    xff = b"x-forwarded-for"
    assert client_key(scope(STRANGER, (xff, b"203.0.113.1")), trusted) == STRANGER  # no proxy: headers ignored
    assert client_key(scope(PROXY, (xff, b"192.0.2.66, 203.0.113.1")), trusted) == "203.0.113.1"
    assert client_key(scope(PROXY, (xff, b"203.0.113.1, 10.0.0.3")), trusted) == "203.0.113.1"  # two proxies
    assert client_key(scope(PROXY, (xff, b"192.0.2.66"), (xff, b"203.0.113.1")), trusted) == "203.0.113.1"
    assert client_key(scope(PROXY, (xff, b"10.0.0.3")), trusted) == "10.0.0.3"  # every hop a proxy
    assert client_key(scope(PROXY, (xff, b"203.0.113.1, nonsense")), trusted) == PROXY  # no proxy wrote that
    assert client_key(scope(PROXY, (b"x-real-ip", b"203.0.113.8")), trusted) == "203.0.113.8"  # no X-Forwarded-For
