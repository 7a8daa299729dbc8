"""A shared test's state governs its routes: a full test says "full" (409), not "closed"; a closed or
expired test stops serving its audio (410) to listeners who joined before; a nickname cannot pose as
another listener on the owner's panel. Before, the 501st listener read "This test is closed", the
audio of a closed or expired test kept being served, and a listener named "L1" showed as listener 1."""

from __future__ import annotations

import numpy as np
from fastapi import FastAPI
from starlette.testclient import TestClient

from core.listening import shared_test_db, shared_test_results, shared_test_store
from core.listening.shared_test_store import SharedTestStore
from webui.serving.shared_test_routes import shared_test_routes
from webui.views import shared_test_view

PLAN = {"a_source": "original", "b_source": "reconstruction", "trials": 2}
AUDIO = {(0, s): np.zeros(2400, dtype=np.int16) for s in ("original", "reconstruction")}


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _served(tmp_path, clock=None) -> tuple[SharedTestStore, FastAPI]:
    store = SharedTestStore(shared_test_db.Database(tmp_path), clock=clock or Clock())
    app = FastAPI()
    app.router.routes.extend(shared_test_routes(store))
    return store, app


def _joined(app, link: str, nickname: str = "") -> tuple[TestClient, dict]:
    client = TestClient(app, client=(f"192.0.2.{hash(nickname) % 200}", 40000))
    got = client.post(f"/listen/{link}/join", json={"nickname": nickname})
    assert got.status_code == 200, got.text
    return client, got.json()


def test_a_full_test_says_full(tmp_path, monkeypatch):
    monkeypatch.setattr(shared_test_store, "MAX_LISTENERS", 2)
    store, app = _served(tmp_path)
    link, _owner = store.create("abx", "sha", PLAN, AUDIO)
    _joined(app, link, "a")
    _joined(app, link, "b")
    late = TestClient(app).post(f"/listen/{link}/join", json={"nickname": "c"}, headers={"accept-language": "en"})
    assert late.status_code == 409
    assert "full" in late.json()["error"] and "closed" not in late.json()["error"]


def test_a_closed_test_stops_serving_its_audio(tmp_path):
    store, app = _served(tmp_path)
    link, owner = store.create("abx", "sha", PLAN, AUDIO)
    client, state = _joined(app, link, "ann")
    url = f"/listen/{link}/audio/{state['sounds'][0]}"
    assert client.get(url).status_code == 200
    store.close(link, owner)
    assert client.get(url).status_code == 410
    assert client.head(url).status_code == 410


def test_an_expired_test_stops_serving_its_audio(tmp_path):
    clock = Clock()
    store, app = _served(tmp_path, clock)
    link, _owner = store.create("abx", "sha", PLAN, AUDIO, ttl_s=60)
    client, state = _joined(app, link, "ann")
    url = f"/listen/{link}/audio/{state['sounds'][2]}"
    assert client.get(url).status_code == 200
    clock.now += 61
    got = client.get(url, headers={"accept-language": "en"})
    assert got.status_code == 410 and "expired" in got.json()["error"]


def test_a_nickname_cannot_pose_as_another_listener(tmp_path):
    store, app = _served(tmp_path)
    link, owner = store.create("abx", "sha", PLAN, AUDIO)
    first, _ = _joined(app, link, "")
    second, state = _joined(app, link, "L1")  # listener 2 names itself after listener 1
    second.post(f"/listen/{link}/abx", json={"trial": 0, "answer": "A"})
    got = store.responses(link, owner)
    nicknames = {x["listener"]: x["nickname"] for x in got["listeners"]}
    page = shared_test_view.abx_html(shared_test_results.pool_abx(got["answers"]), nicknames, "en")
    assert "<td>L2 · L1</td>" in page and "<td>L1</td>" not in page
