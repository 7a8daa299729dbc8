"""Answers that could not come from listening are flagged: the server records which sounds each
listener fetched and when (``core.listening.shared_test_fetches``); an ABX answer whose X was never
fetched, or that came sooner after the trial's first fetch than the region lasts (the 10-line
script that finds X by subtraction), is marked on the owner's panel and in the CSV and left out of
the pooled result unless the excluded are included. Before, such a script scored 10/10 unseen."""

from __future__ import annotations

import csv
import html
from types import SimpleNamespace
from typing import Any

import gradio as gr
import numpy as np
from fastapi import FastAPI
from starlette.testclient import TestClient

from core.listening import shared_test_db
from core.listening.shared_test_store import SharedTestStore
from core.settings import Settings
from webui.jobs import shared_test
from webui.serving.shared_test_routes import shared_test_routes
from webui.serving.workspace import Workspace
from webui.tabs.shared_test import ShareHandlers

EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9", "host": "x"})
SECONDS = 2.0  # the region
PLAN = {"a_source": "original", "b_source": "reconstruction", "trials": 4}
RNG = np.random.default_rng(0)
AUDIO = {
    (0, s): RNG.integers(-3000, 3000, int(SECONDS * 24_000)).astype(np.int16) for s in ("original", "reconstruction")
}


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _room(tmp_path):
    clock = Clock()
    store = SharedTestStore(shared_test_db.Database(tmp_path / "data"), clock=clock)
    app = FastAPI()
    app.router.routes.extend(shared_test_routes(store))
    link, owner = store.create("abx", "sha", PLAN, AUDIO)
    return clock, store, app, link, {"link": link, "owner": owner, "kind": "abx", "url": ""}


def _x_of(store, link, client, state) -> str:
    """The right answer, as only the server knows it (the test plays the script that found X)."""
    info, who = store.listener(link, client.cookies["cw_listener"])
    return store.abx_plan(info, who)[state["trial"]]


def _listen_and_answer(clock, store, link, client, state, fetch=("A", "B", "X"), wait_s=SECONDS + 1) -> dict:
    for slot in fetch:
        r = client.get(f"/listen/{link}/audio/{state['sounds']['ABX'.index(slot)]}", headers={"range": "bytes=0-99"})
        assert r.status_code == 206
    clock.now += wait_s
    r = client.post(f"/listen/{link}/abx", json={"trial": state["trial"], "answer": _x_of(store, link, client, state)})
    assert r.status_code == 200, r.text
    return r.json()


def test_answers_that_could_not_come_from_listening_are_flagged_and_left_out(tmp_path):
    clock, store, app, link, owned = _room(tmp_path)
    listener = TestClient(app, client=("192.0.2.1", 1))
    state = listener.post(f"/listen/{link}/join", json={"nickname": "ann"}).json()
    for _ in range(2):  # listens through, then answers
        state = _listen_and_answer(clock, store, link, listener, state)
    script = TestClient(app, client=("192.0.2.2", 1))
    state = script.post(f"/listen/{link}/join", json={"nickname": "bot"}).json()
    state = _listen_and_answer(clock, store, link, script, state, wait_s=0.05)  # fetched, analysed, answered at once
    state = _listen_and_answer(clock, store, link, script, state, fetch=("A", "B"))  # X never fetched

    got = store.responses(link, owned["owner"])
    flags = {(a["listener"], a["trial"]): a["flag"] for a in got["answers"]}
    assert flags == {("L1", 0): "", ("L1", 1): "", ("L2", 0): "too_quick", ("L2", 1): "not_fetched"}
    assert {(r["listener"], r["trial"]): r["flag"] for r in store.export_rows()} == flags  # the operator's export

    shown = html.unescape(handlers_text := ShareHandlers.responses(_h(tmp_path, store), owned, False, EN))
    assert "2 answers could not come from listening" in shown and "left out" in shown
    assert "2 of 2 correct" in shown  # only ann's: the script's 2 of 2 are not pooled
    counted = html.unescape(ShareHandlers.responses(_h(tmp_path, store), owned, True, EN))
    assert "4 of 4 correct" in counted and handlers_text != counted
    path = ShareHandlers.csv(_h(tmp_path, store), owned, False, EN)
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    assert sorted(r["flag"] for r in rows) == ["", "", "not_fetched", "too_quick"]


def _h(tmp_path, store) -> ShareHandlers:
    engine: Any = SimpleNamespace(settings=Settings(data_dir=str(tmp_path / "data")))  # the store is all it uses
    handlers = ShareHandlers(engine, Workspace(tmp_path / "w"))
    handlers.store = store
    return handlers


def test_the_fetch_of_a_sound_is_recorded_once_per_sound(tmp_path):
    clock, store, app, link, _owned = _room(tmp_path)
    client = TestClient(app)
    state = client.post(f"/listen/{link}/join", json={}).json()
    for _ in range(3):
        clock.now += 1
        assert client.get(f"/listen/{link}/audio/{state['sounds'][2]}").status_code == 200
    info, who = store.listener(link, client.cookies["cw_listener"])
    assert store.fetches.of_test(info.test) == {(who.listener, 0): {"X": 1_000_001.0}}
    same = client.get(f"/listen/{link}/audio/{state['sounds'][2]}").content
    assert same == shared_test.listener_wav(AUDIO[(0, _x_source(store, info, who))], state["sounds"][2])


def _x_source(store, info, who) -> str:
    return info.plan["a_source"] if store.abx_plan(info, who)[0] == "A" else info.plan["b_source"]
