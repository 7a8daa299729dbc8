"""A shared listening test through the live server (issue 28): the owner shares a MUSHRA and an ABX
test, listeners join over HTTP with cookies of their own, rate or answer, and the owner's pooled
result counts them; every bad input gets its clear error; nothing a listener receives (page, state
JSON, audio URLs, bytes, headers) tells a condition."""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
import time

import gradio as gr
import httpx
import numpy as np
import pytest
import soundfile as sf

from core.listening import mushra
from tests.webui.shared_test_server import shared_test_server
from webui.options import ASSETS
from webui.serving.workspace import Workspace
from webui.tabs.shared_test import ShareHandlers

EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9", "host": "x"})
ZH = gr.Request(headers={"accept-language": "zh-CN,zh;q=0.9", "host": "x"})
CLIP = ASSETS / "speech_male_24k.wav"
LAST = {"audio": str(CLIP), "start_s": 0.5, "end_s": 2.5}
CHOSEN = ["reconstruction", "opus6", "k2"]
CONDITION_WORDS = ("original", "reconstruction", "opus", "lp3", "lp7", "k2", "codec", "anchor", "reference")


@pytest.fixture(scope="module")
def served(tiny_checkpoint, tmp_path_factory):
    with shared_test_server(tiny_checkpoint, tmp_path_factory, "share") as (url, engine, ui):
        yield url, ShareHandlers(engine, Workspace(ui.temp_root))


def _share(handlers, kind="mushra", chosen=CHOSEN, trials=4):
    owned, link_html, _results = handlers.share(LAST, kind, chosen, trials, None, EN)
    assert "<svg" in link_html and owned["link"] in link_html  # the link and its QR code
    return owned


def _listener(url: str, owned: dict, nickname: str) -> tuple[httpx.Client, dict]:
    client = httpx.Client(base_url=f"{url}/listen/{owned['link']}", timeout=60)
    page = client.get(f"{url}/listen/{owned['link']}")
    assert page.status_code == 200 and "cw-listen" in page.text
    state = client.post("/join", json={"nickname": nickname}).json()
    assert state["joined"] and state["state"] == "open"
    return client, state


def _rate(client: httpx.Client, state: dict, want: dict[str, int], handlers, owned) -> dict:
    """Rate each sound by what it is (the test looks the handles up on the server side, as only it can)."""
    info, who = handlers.store.listener(owned["link"], client.cookies["cw_listener"])
    from webui.jobs import shared_test

    slots = shared_test.mushra_slots(info.seed, who.listener, state["screen"], info.plan["conditions"])
    ratings = {h: want[slots[h]] for h in state["sounds"]}
    r = client.post("/rate", json={"screen": state["screen"], "ratings": ratings})
    assert r.status_code == 200, r.text
    return r.json()


GOOD = {"original": 96, "lp3.5": 14, "lp7": 38, "reconstruction": 70, "opus6": 47, "k2": 30}


def test_a_shared_mushra_test_pools_three_listeners_and_screens_one_out(served):
    url, handlers = served
    owned = _share(handlers)
    people = [_listener(url, owned, name) for name in ("ann", "bob", "cy")]
    assert len({c.cookies["cw_listener"] for c, _ in people}) == 3  # each listener a key of their own
    for client, state in people:  # each listens to every sound of the screen, for as long as the region lasts
        for h in (state["reference"], *state["sounds"]):
            assert client.get(f"/audio/{h}", headers={"range": "bytes=0-1023"}).status_code == 206
    time.sleep(LAST["end_s"] - LAST["start_s"] + 0.1)
    for (client, state), want in zip(
        people, [GOOD, dict(GOOD, reconstruction=74), dict(GOOD, original=50)], strict=True
    ):
        done = _rate(client, state, want, handlers, owned)
        assert done["screen"] is None  # one screen: finished
    shown = html.unescape(handlers.responses(owned, False, EN))
    assert "3 listeners, 2 kept: " in shown and "the hidden reference rated 'excellent' (96 ± 0)" in shown
    assert "Codec (2.2 kbit/s) rated 'good' (72 ± " in shown
    assert 'data-state="excluded"><td>L3 · cy</td>' in shown and "below 90" in shown  # who, and why
    assert "3 listeners, 3 kept" not in handlers.responses(owned, True, EN)
    assert "隐藏参考" in handlers.responses(owned, False, ZH)
    csv_path = handlers.csv(owned, False, EN)
    rows = open(csv_path, encoding="utf-8").read().splitlines()
    assert len(rows) == 1 + 3 * 6 and "reconstruction" in rows[1] + "".join(rows)  # one row per rating, ids
    assert "Codec" not in "".join(rows)


def test_a_shared_abx_test_pools_total_correct_with_exact_p(served):
    url, handlers = served
    owned = _share(handlers, "abx", ["k2"], trials=4)
    for name in ("ann", "bob"):
        client, state = _listener(url, owned, name)
        info, who = handlers.store.listener(owned["link"], client.cookies["cw_listener"])
        plan = handlers.store.abx_plan(info, who)
        while state["trial"] is not None:
            assert len(state["sounds"]) == 3
            state = client.post("/abx", json={"trial": state["trial"], "answer": plan[state["trial"]]}).json()
    shown = html.unescape(handlers.responses(owned, True, EN))  # answered without fetching X: flagged, counted in
    assert "2 listeners, 8 of 8 correct: the room can tell them apart, p = 0.0039" in shown
    assert "Compared: Original (A) with " in shown and "(B)." in shown  # what the room told apart
    assert "8 answers could not come from listening" in shown
    assert "No listener has finished" in html.unescape(handlers.responses(owned, False, EN))  # left out by default


def test_bad_input_gets_clear_errors_and_changes_nothing(served):
    url, handlers = served
    owned = _share(handlers)
    client, state = _listener(url, owned, "ann")
    sounds = state["sounds"]

    def post(body):
        return client.post("/rate", json=body)

    out_of_range = {h: 50 for h in sounds} | {sounds[0]: 101}
    assert post({"screen": 0, "ratings": out_of_range}).status_code == 400
    assert "0 to 100" in post({"screen": 0, "ratings": out_of_range}).json()["error"]
    unknown = {h: 50 for h in sounds[1:]} | {"0" * 32: 50}
    r = post({"screen": 0, "ratings": unknown})
    assert r.status_code == 400 and "not on this screen" in r.json()["error"]
    assert post({"screen": 9, "ratings": {h: 50 for h in sounds}}).status_code == 400
    assert post({"screen": "0", "ratings": {}}).status_code == 400
    assert client.post("/rate", content=b"not json", headers={"content-type": "application/json"}).status_code == 400
    deep = b"[" * 100_000 + b"]" * 100_000  # a RecursionError in the parser was a bare 500
    assert client.post("/rate", content=deep, headers={"content-type": "application/json"}).status_code == 400
    assert handlers.store.responses(owned["link"], owned["owner"])["ratings"] == []  # nothing written
    assert post({"screen": 0, "ratings": {h: 60 for h in sounds}}).status_code == 200
    replay = post({"screen": 0, "ratings": {h: 10 for h in sounds}})
    assert replay.status_code == 409 and "already" in replay.json()["error"]
    # no answering for another listener: without their cookie there is no listener
    stranger = httpx.Client(base_url=f"{url}/listen/{owned['link']}", timeout=30)
    r = stranger.post("/rate", json={"screen": 0, "ratings": {h: 10 for h in sounds}})
    assert r.status_code == 403 and "not valid" in r.json()["error"]
    assert {x["rating"] for x in handlers.store.responses(owned["link"], owned["owner"])["ratings"]} == {60}
    # an unknown link, closed and expired tests say so
    assert httpx.get(f"{url}/listen/{'A' * 32}", timeout=30).status_code == 404
    handlers.close(owned, False, EN)
    late = httpx.Client(base_url=f"{url}/listen/{owned['link']}", timeout=30)
    r = late.post("/join", json={})
    assert r.status_code == 410 and "closed" in r.json()["error"]
    assert late.get("/state").json()["state"] == "closed"


def test_answers_are_rate_limited_per_client(served):
    url, handlers = served
    owned = _share(handlers, "abx", ["k2"], trials=4)
    client, _ = _listener(url, owned, "fast")
    codes = [client.post("/abx", json={"trial": 99, "answer": "A"}).status_code for _ in range(40)]
    assert 429 in codes and codes[0] == 409  # a wrong trial is a replay error, until the limit says wait
    assert "wait" in client.post("/abx", json={"trial": 0, "answer": "A"}).json()["error"]


def test_a_listener_learns_nothing_of_which_sound_is_which(served):
    url, handlers = served
    owned = _share(handlers)
    client, state = _listener(url, owned, "eve")
    page = client.get(f"{url}/listen/{owned['link']}")
    dom = re.sub(r"<script>.*?</script>", "", page.text, flags=re.S)
    for word in ("reconstruction", "opus", "lp3.5", "lp7", "k2", "low-pass", "codebooks", "hidden reference"):
        assert word not in dom.lower()  # the DOM
        assert word not in json.dumps(state).lower()  # the state the script reads
    other_test = _share(handlers, chosen=["amr"])  # the page is the same whatever the conditions are
    assert httpx.get(f"{url}/listen/{other_test['link']}", timeout=30).text == page.text
    assert all(re.fullmatch(r"[0-9a-f]{32}", h) for h in [state["reference"], *state["sounds"]])
    bodies, heads = [], []
    for h in state["sounds"]:
        r = client.get(f"/audio/{h}")
        assert r.status_code == 200
        heads.append({k.lower(): v for k, v in r.headers.items() if k.lower() not in ("date",)})
        bodies.append(r.content)
        assert not any(w in " ".join(r.headers.values()).lower() for w in CONDITION_WORDS)
        assert "etag" not in r.headers and "last-modified" not in r.headers and "content-disposition" not in r.headers
        assert r.headers["cache-control"] == "no-store"
    assert len({len(b) for b in bodies}) == 1  # same byte length for every sound
    assert len({hashlib.sha256(b).hexdigest() for b in bodies}) == len(bodies)
    assert len({json.dumps(h, sort_keys=True) for h in heads}) == 1  # identical headers
    again = client.get(f"/audio/{state['sounds'][0]}", headers={"Range": "bytes=100-199"})
    assert again.status_code == 206 and again.content == bodies[0][100:200]  # ranges of one file agree
    # the reference and the hidden reference are different bytes though the same samples, within 1 LSB
    ref = sf.read(io.BytesIO(client.get(f"/audio/{state['reference']}").content), dtype="int16")[0].astype(int)
    hidden = [sf.read(io.BytesIO(b), dtype="int16")[0].astype(int) for b in bodies]
    assert min(np.abs(ref - x).max() for x in hidden) <= 2
    # another listener's sound is not theirs to fetch
    other, other_state = _listener(url, owned, "mallory")
    assert client.get(f"/audio/{other_state['sounds'][0]}").status_code == 404
    assert httpx.get(f"{url}/listen/{owned['link']}/audio/{state['sounds'][0]}", timeout=30).status_code == 403


def test_the_order_differs_between_listeners(served):
    url, handlers = served
    owned = _share(handlers)
    orders = set()
    for name in "abcd":
        client, state = _listener(url, owned, name)
        info, who = handlers.store.listener(owned["link"], client.cookies["cw_listener"])
        orders.add(tuple(mushra.order(info.plan["conditions"], info.seed, who.listener, 0)))
    assert len(orders) > 1


def test_sharing_without_a_clip_or_with_too_many_conditions_is_refused(served):
    _url, handlers = served
    with pytest.raises(gr.Error, match="No clip yet"):
        handlers.share(None, "mushra", CHOSEN, 4, None, EN)
    with pytest.raises(gr.Error, match="at most 6"):
        handlers.share(LAST, "mushra", ["k8", "k4", "k2", "opus6", "opus12", "amr", "mp3"], 4, None, EN)


def test_abx_with_two_conditions_ticked_is_refused_not_cut_to_the_first(served):
    _url, handlers = served
    with pytest.raises(gr.Error, match="ABX compares the original with one condition, and 2 are ticked"):
        handlers.share(LAST, "abx", ["reconstruction", "k2"], 4, None, EN)
