"""The blind test as people use it: through the API (two private sessions), B at a ladder level
(handlers called directly), and in Debian's chromium with the keyboard (a 4-trial test ending in
the score). Saves docs/abx.png."""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.audio.files import load_audio
from core.listening import abx_store
from core.model.engine import Engine
from core.settings import Settings
from tests.ports import reserve_port
from webui.app import build_app
from webui.options import ASSETS, UiOptions
from webui.server import ServerOptions, launch
from webui.serving.workspace import Workspace
from webui.tabs.abx import AbxHandlers

EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9"})
ZH = gr.Request(headers={"accept-language": "zh-CN,zh;q=0.9"})
REPO = Path(__file__).resolve().parents[2]
CLIP = ASSETS / "speech_male_24k.wav"
SCREENSHOT = REPO / "docs" / "abx.png"
TIMEOUT_MS = 90_000  # a round trip on 2 busy CPU cores


@pytest.fixture(scope="module")
def abx_server(tiny_checkpoint, tmp_path_factory):
    """A live server whose answers go to a data folder of its own."""
    data = tmp_path_factory.mktemp("abx-data")
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", data_dir=str(data)))
    assert engine.warm_up().ok, engine.error  # loaded and checked: /ready can say 200
    ui = UiOptions(temp_root=tmp_path_factory.mktemp("abx-work"))
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    yield url, data
    demo.close()


def test_api_sessions_are_private_and_results_wait_for_the_last_answer(abx_server):
    from gradio_client import Client, handle_file

    url, data = abx_server
    me, other = Client(url, verbose=False), Client(url, verbose=False)
    token, trial, _refs, x_player, prompt, *_ = me.predict(handle_file(str(CLIP)), 0, 3, 4, api_name="/abx_start")
    assert trial == 0 and "Trial 1 of 4" in prompt and "x-" in x_player
    assert re.search(r"/x-[0-9a-f]{24}\.wav\"", x_player)  # X's file name says nothing about A or B
    their_token = other.predict(handle_file(str(CLIP)), 0, 0, 4, api_name="/abx_start")[0]
    assert their_token != token and len(token) >= 40

    for i in range(3):
        trial, x_player, prompt = me.predict(token, trial, "A", api_name="/abx_answer")
        text, csv_file, raw = me.predict(token, api_name="/abx_results")
        assert "p =" not in text and raw == {"answered": i + 1, "planned": 4}  # no hint of the score yet
    mine = other.predict(their_token, api_name="/abx_results")[2]
    assert mine["answered"] == 0  # my three answers are not in their session
    trial, _x, prompt = me.predict(token, trial, "B", api_name="/abx_answer")
    text, csv_file, raw = me.predict(token, api_name="/abx_results")
    assert re.search(r"\d of 4: .*p = [01]\.\d{3}", text) and raw["trials"] == 4  # 0 right (1 in 16) gives p = 1.000
    assert Path(csv_file).read_text().count("\n") == 5  # header + 4 trials, mine only
    assert (data / "abx.sqlite3").is_file()

    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="unknown here"):
        other.predict("not-a-token", api_name="/abx_results")


@pytest.fixture
def abx_handlers(engine, tmp_path) -> AbxHandlers:
    """The tab's handlers on the shared tiny engine, answers in a data folder of their own."""
    handlers = AbxHandlers(engine, Workspace(tmp_path / "work"))
    handlers.store = abx_store.AbxStore(tmp_path / "data")
    return handlers


def _b(handlers: AbxHandlers, token: str) -> np.ndarray:
    return sf.read(handlers._folder(token) / "b.wav", dtype="float32")[0]


def test_b_at_a_ladder_level_is_that_decode_and_every_trial_stores_the_level(abx_handlers, engine, clip):
    full = engine.roundtrip(load_audio(clip)).decoded.samples  # the full-rate reconstruction
    at_16 = abx_handlers.start(str(clip), 0, 0, 4, 16, EN)
    lsb = 1 / 32767
    np.testing.assert_allclose(
        _b(abx_handlers, at_16[0]), np.clip(full, -1, 1), rtol=0, atol=2 * lsb
    )  # 16 bit, dithered
    token, trial, references, *_ = abx_handlers.start(str(clip), 0, 0, 4, 2, EN)
    b = _b(abx_handlers, token)
    assert b.shape == full.shape and np.abs(b - full).max() > 1e-3  # 2 codebooks: another decode
    assert "2 of 16 codebooks, 275 bit/s" in references  # B's caption says what B is

    for _ in range(4):
        trial, _x, _prompt = abx_handlers.answer(token, trial, "A", EN)
    text, csv_path, raw = abx_handlers.results(token, EN)
    with open(csv_path, newline="", encoding="utf-8") as f:
        levels = [(row["a_source"], row["b_source"]) for row in csv.DictReader(f)]
    assert levels == [("original", "k2")] * 4  # stored by source id, never by its words
    assert [(row["a_source"], row["b_source"]) for row in raw["trials_detail"]] == levels
    assert raw["sentence"].endswith("(A: original; B: first 2 of 16 codebooks, 275 bit/s)")  # English, for the CSV
    assert "(A: Original; B: 2 of 16 codebooks, 275 bit/s)" in text  # the page words the ids
    zh, _csv, _raw = abx_handlers.results(token, ZH)  # was a KeyError (compare.abx_sentence_ab was in no catalogue)
    assert "（A：原始；B：16 个码本中的 2 个，275 bit/s）" in zh


@pytest.mark.parametrize("level", [0, 17, "abc", 2.5])
def test_a_bad_level_is_refused_with_advice_and_the_next_start_works(abx_handlers, clip, level):
    with pytest.raises(gr.Error, match=r"number of codebooks from 1 to 16 .*pick one in the list"):
        abx_handlers.start(str(clip), 0, 0, 4, level, EN)
    with pytest.raises(gr.Error, match="码本数"):
        abx_handlers.start(str(clip), 0, 0, 4, level, ZH)
    assert not list(abx_handlers.workspace.root.glob("*abx-*"))  # refused before any work or storage
    token, trial, *_ = abx_handlers.start(str(clip), 0, 0, 4, None, EN)  # None: the full rate
    abx_handlers.answer(token, trial, "B", EN)
    assert abx_handlers.store.rows(token)[0]["b_source"] == "reconstruction"


def test_api_callers_without_a_level_get_the_full_rate_and_a_bad_one_is_refused(abx_server):
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import AppError

    client = Client(abx_server[0], verbose=False)
    with pytest.raises(AppError, match="1 to 16"):
        client.predict(handle_file(str(CLIP)), 0, 2, 4, 17, api_name="/abx_start")
    refs = client.predict(handle_file(str(CLIP)), 0, 2, 4, api_name="/abx_start")[2]  # the call before levels
    assert "16 of 16 codebooks, 2200 bit/s" in refs
    refs = client.predict(handle_file(str(CLIP)), 0, 2, 4, "8", api_name="/abx_start")[2]
    assert "8 of 16 codebooks, 1100 bit/s" in refs


def test_region_shorter_than_a_second_is_refused_with_advice(abx_server):
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="at least 1 s"):
        Client(abx_server[0], verbose=False).predict(handle_file(str(CLIP)), 2.0, 2.5, 4, api_name="/abx_start")


@pytest.mark.browser
def test_a_four_trial_blind_test_with_the_keyboard_shows_the_score(abx_server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS, _save_small

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(abx_server[0])
        page.get_by_role("tab", name="Blind test").click()
        page.locator("#abx-other .label-wrap").first.click()  # another clip than the round trip's
        page.locator("#abx-input input[type=file]").set_input_files(str(CLIP))
        expect(page.locator("#abx-input [data-testid=download-link]")).to_be_attached(timeout=TIMEOUT_MS)
        page.locator("#abx-trials").get_by_text("4", exact=True).click()
        expect(page.locator("#abx-answer-a")).to_be_hidden()  # answer buttons only while a test runs
        page.locator("#abx-start").click()
        results = page.locator("#abx-results")
        for n in range(1, 5):
            expect(page.locator("#abx-prompt")).to_contain_text(f"Trial {n} of 4", timeout=TIMEOUT_MS)
            page.wait_for_function(  # A, B and this trial's X in the transport, the whole clip
                "window.cwAbx && window.cwAbx.state().sources.join() === 'a,b,x' && window.cwAbx.state().duration > 7",
                timeout=TIMEOUT_MS,
            )
            assert page.evaluate("window.cwAbx.state().duration") == pytest.approx(7.2, abs=0.1)
            assert "p =" not in results.inner_text()  # no feedback until the end
            page.locator("body").click(position={"x": 5, "y": 5})  # focus off any input
            page.keyboard.press("a" if n % 2 else "b")
        expect(results).to_contain_text("of 4:", timeout=TIMEOUT_MS)
        expect(results).to_contain_text("p = ")
        expect(page.locator("#abx-answer-a")).to_be_hidden()
        page.locator("#abx-raw .label-wrap").first.click()
        expect(page.locator("#abx-csv")).to_contain_text(".csv")
        page.wait_for_timeout(300)
        shot = tmp_path / "abx.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    _save_small(shot, SCREENSHOT)


# ------------------------------------------------------------------ issue 19: blind, bounded, said in words


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_x_cannot_be_told_from_a_and_b_by_its_bytes(abx_handlers, clip):
    """Finding 6: X was a byte copy of A or B (same SHA-256), so a script answered every trial right."""
    token, trial, _refs, x_player, *_ = abx_handlers.start(str(clip), 0, 0, 6, None, EN)
    folder = abx_handlers._folder(token)
    a, b = sf.read(folder / "a.wav", dtype="int16")[0], sf.read(folder / "b.wav", dtype="int16")[0]
    seen = set()
    while trial is not None and trial < 6:
        x_path = Path(html.unescape(re.search(r'data-path="([^"]+)"', x_player).group(1)))
        assert _sha(x_path) not in (_sha(folder / "a.wav"), _sha(folder / "b.wav"), *seen)
        assert x_path.stat().st_size == (folder / "a.wav").stat().st_size  # sizes say nothing either
        x = sf.read(x_path, dtype="int16")[0].astype(int)
        assert min(np.abs(x - a).max(), np.abs(x - b).max()) <= 1  # one dither step from A or B: the same sound
        seen.add(_sha(x_path))
        trial, x_player, _prompt = abx_handlers.answer(token, trial, "A", EN)


def test_a_stale_answer_writes_nothing_and_no_output_carries_the_score_before_the_end(abx_handlers, clip):
    """Finding 8: 20 stale answers wrote 3.4 GB; finding 6: the running score was in /abx_results."""
    token, trial, _refs, x_player, *_ = abx_handlers.start(str(clip), 0, 0, 4, None, EN)
    folder = abx_handlers._folder(token)
    trial, x_player, _ = abx_handlers.answer(token, trial, "A", EN)
    files = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    for _ in range(20):
        assert abx_handlers.answer(token, 0, "B", EN)[1] == x_player  # the trial already answered: same X
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == files
    text, csv_path, raw = abx_handlers.results(token, EN)
    assert raw == {"answered": 1, "planned": 4} and csv_path is None and "p =" not in text


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda h, t, clip: h.answer(t, None, "A", EN), "trial number must be a whole number"),
        (lambda h, t, clip: h.answer(t, "nan", "A", EN), "trial number must be a whole number"),
        (lambda h, t, clip: h.answer("\ud800" * 43, 0, "A", EN), "unknown here"),
        (lambda h, t, clip: h.start(str(clip), float("nan"), 0, 4, None, EN), "must be numbers of seconds"),
        (lambda h, t, clip: h.start(str(clip), 0, "inf", 4, None, EN), "must be numbers of seconds"),
    ],
)
def test_odd_values_from_a_client_get_a_message_not_a_traceback(abx_handlers, clip, caplog, call, words):
    """Finding 13: trial=null, a lone-surrogate token or a NaN region gave the generic error and a traceback."""
    token = abx_handlers.start(str(clip), 0, 0, 4, None, EN)[0]
    with pytest.raises(gr.Error, match=words):
        call(abx_handlers, token, clip)
    assert "Traceback" not in caplog.text and "unexpected error" not in caplog.text


def test_a_region_longer_than_the_limit_is_refused_before_any_model_work(engine, tmp_path, speech):
    """Finding 8: /abx_start on a 30-minute clip took 65 s, 515 MB of disk and 5.1 GB."""
    from dataclasses import replace

    long_clip = tmp_path / "long.wav"
    sf.write(long_clip, np.tile(speech(5.0), 2), 24_000, subtype="PCM_16")
    unloaded = Engine(replace(engine.settings, abx_max_region_s=4.0, data_dir=str(tmp_path / "data")))
    handlers = AbxHandlers(unloaded, Workspace(tmp_path / "work"))  # refused before the model is needed
    with pytest.raises(gr.Error, match=r"10\.0 s long; a blind test takes at most 4 s"):
        handlers.start(str(long_clip), 0, 0, 4, None, EN)
    assert not list(handlers.workspace.root.glob("*abx-*"))


def test_a_damaged_database_reaches_ready_and_the_next_answer_repairs_it(abx_server):
    """Finding 7: a corrupted file failed every call while /ready stayed 200."""
    import urllib.error
    import urllib.request

    from gradio_client import Client, handle_file

    url, data = abx_server
    client = Client(url, verbose=False)
    token, trial, *_ = client.predict(handle_file(str(CLIP)), 0, 2, 4, api_name="/abx_start")
    for name in ("abx.sqlite3", "abx.sqlite3-wal", "abx.sqlite3-shm"):
        (data / name).unlink(missing_ok=True)
    (data / "abx.sqlite3").write_bytes(b"garbage, not SQLite " * 200)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(url + "ready", timeout=10)
    assert caught.value.code == 503 and b"damaged" in caught.value.read()
    assert client.predict(token, trial, "A", api_name="/abx_answer")[0] == 1  # repaired on use, answer kept
    try:
        status = urllib.request.urlopen(url + "ready", timeout=10).status
    except urllib.error.HTTPError as e:
        status = (e.code, e.read())
    assert status == 200
