"""The shared tests' database when it goes wrong under a running server: a deleted ``room.sqlite3``
is made again (it said "no such table ... try again in a moment" until a restart), a damaged one is
moved aside and a new one made (a bare plain-text 500 before), a failing one is a 503 in words;
``/ready`` says so (it stayed 200) and says when the data folder's disk is full. The listener's
audio requests are metered (they were not)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from fastapi import FastAPI
from starlette.testclient import TestClient

from core.listening import shared_test_db
from core.listening.shared_test_store import SharedTestStore
from core.settings import Settings
from webui.serving import health
from webui.serving.shared_test_routes import shared_test_routes

PLAN = {"a_source": "original", "b_source": "reconstruction", "trials": 2}
AUDIO = {(0, s): np.zeros(2400, dtype=np.int16) for s in ("original", "reconstruction")}
EN = {"accept-language": "en"}


def _app(data, **limits) -> tuple[SharedTestStore, TestClient]:
    store = SharedTestStore(shared_test_db.Database(data))
    app = FastAPI()
    app.router.routes.extend(shared_test_routes(store, **limits))
    health.add_health_routes(
        app, SimpleNamespace(settings=Settings(data_dir=str(data)), state=SimpleNamespace(value="loading"), ready=False)
    )
    return store, TestClient(app)


def _remove(data) -> None:
    for f in data.glob(shared_test_db.DB_NAME + "*"):
        f.unlink()


def test_a_deleted_database_is_made_again(tmp_path):
    store, client = _app(tmp_path)
    old, _ = store.create("abx", "sha", PLAN, AUDIO)
    assert client.post(f"/listen/{old}/join", json={}).status_code == 200
    _remove(tmp_path)
    gone = client.get(f"/listen/{old}/state", headers=EN)
    assert gone.status_code == 404 and "does not exist" in gone.json()["error"]  # not "no such table"
    new, _ = store.create("abx", "sha", PLAN, AUDIO)
    assert client.post(f"/listen/{new}/join", json={}).status_code == 200


def test_a_damaged_database_is_reported_then_moved_aside_and_made_again(tmp_path):
    store, client = _app(tmp_path)
    old, _ = store.create("abx", "sha", PLAN, AUDIO)
    _remove(tmp_path)
    (tmp_path / shared_test_db.DB_NAME).write_bytes(b"not a database" * 1000)
    ready = client.get("/ready")
    assert ready.status_code == 503 and "shared-tests database" in ready.json()["reason"]
    assert "damaged" in ready.json()["reason"]
    got = client.get(f"/listen/{old}/state", headers=EN)
    assert got.status_code == 404 and got.headers["content-type"] == "application/json"  # a sentence, the file replaced
    assert list(tmp_path.glob(shared_test_db.DB_NAME + ".damaged-*"))  # kept for the operator
    new, _ = store.create("abx", "sha", PLAN, AUDIO)
    assert client.post(f"/listen/{new}/join", json={}).status_code == 200
    assert "shared-tests" not in (client.get("/ready").json()["reason"] or "")


def test_a_database_that_fails_is_a_503_in_words(tmp_path):
    store, client = _app(tmp_path)
    link, _ = store.create("abx", "sha", PLAN, AUDIO)
    _remove(tmp_path)
    (tmp_path / shared_test_db.DB_NAME).mkdir()  # where the file was, something that cannot be opened as one
    got = client.get(f"/listen/{link}/state", headers=EN)
    assert got.status_code == 503 and "store of tests" in got.json()["error"]


def test_ready_says_when_the_data_folders_disk_is_full(tmp_path, monkeypatch):
    _store, client = _app(tmp_path)
    monkeypatch.setattr(health.storage, "MIN_FREE_MIB", 1e12)  # more than any disk has free
    ready = client.get("/ready")
    assert ready.status_code == 503 and "data folder" in ready.json()["reason"] and "full" in ready.json()["reason"]


def test_a_listeners_audio_requests_are_metered(tmp_path):
    store, client = _app(tmp_path, audio_per_min=5)
    link, _ = store.create("abx", "sha", PLAN, AUDIO)
    state = client.post(f"/listen/{link}/join", json={}).json()
    got = [
        client.get(f"/listen/{link}/audio/{state['sounds'][0]}", headers={"range": "bytes=0-9"}).status_code
        for _ in range(7)
    ]
    assert got == [206] * 5 + [429, 429]


def test_each_sound_is_made_once_however_often_it_is_fetched(tmp_path, monkeypatch):
    """The player reads a WAV in byte ranges: the dithered WAV is made once (it was made again for
    every request, on the event loop: 20 parallel requests took /health from 8 ms to 0.59 s)."""
    from webui.jobs import shared_test

    made = []
    real = shared_test.listener_wav
    monkeypatch.setattr(
        shared_test, "listener_wav", lambda steps, handle, *rate: made.append(handle) or real(steps, handle, *rate)
    )
    store, client = _app(tmp_path)
    link, _ = store.create("abx", "sha", PLAN, AUDIO)
    state = client.post(f"/listen/{link}/join", json={}).json()
    first = client.get(f"/listen/{link}/audio/{state['sounds'][0]}").content
    for start in range(0, 4000, 400):
        part = client.get(
            f"/listen/{link}/audio/{state['sounds'][0]}", headers={"range": f"bytes={start}-{start + 399}"}
        )
        assert part.content == first[start : start + 400]
    assert made == [state["sounds"][0]]
