"""Issue 28 in Debian's chromium: the owner shares a MUSHRA test from a round trip's result, three
listeners in browser contexts of their own (no shared cookies; one a phone at 390 × 844 with touch)
open the link and rate, one fails screening, and the owner's page shows the pooled means, intervals,
who was excluded and the sentence, live. The same for ABX. Saves docs/listening.png.

The listeners rate by what each sound is: the test looks the handles up on the server's side (only
the server knows them; the page does not, see tests/webui/test_share.py)."""

from __future__ import annotations

import html
import json
import re
import urllib.parse
import zipfile
from pathlib import Path

import pytest

from core.listening import shared_test_store
from tests.webui.shared_test_server import shared_test_server
from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS, CLIP, REPO, TIMEOUT_MS, _save_small
from webui.jobs import shared_test

pytestmark = pytest.mark.browser
SCREENSHOT = REPO / "docs" / "listening.png"
GOOD = {"original": 95, "lp3.5": 12, "lp7": 35, "reconstruction": 72, "opus6": 46}
CARELESS = dict(GOOD, original=55)  # the hidden reference below 90: screened out


@pytest.fixture(scope="module")
def app(tiny_checkpoint, tmp_path_factory):
    with shared_test_server(tiny_checkpoint, tmp_path_factory, "share-browser") as (url, engine, _ui):
        yield url, shared_test_store.store_for(engine.settings)


@pytest.fixture(scope="module")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, "--autoplay-policy=no-user-gesture-required"]
        )
        yield browser
        browser.close()


def _owner_shares(chromium, url: str, kind: str):
    page = chromium.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(url)
    page.locator("#roundtrip-input input[type=file]").set_input_files(str(CLIP))
    page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
    page.locator("#roundtrip-run").click()
    page.locator("#roundtrip-verdict [data-state=final]").wait_for(timeout=TIMEOUT_MS)
    page.locator("#roundtrip-blind-run").click()  # the result's *Blind-test this clip*: its clip, to the tab
    page.locator("#abx-prompt").filter(has_text="Trial 1").wait_for(timeout=TIMEOUT_MS)
    page.locator("#share-panel .label-wrap").first.click()
    if kind == "abx":
        page.locator("#share-kind").get_by_text("ABX", exact=True).click()
        page.locator("#share-trials input").fill("4")
    page.locator("#share-button").click()
    link = page.locator("#share-url")
    link.wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#share-link .cw-share-qr svg").is_visible()  # the QR code (a spinner is an svg too)
    return page, link.inner_text()


def _listener(chromium, url: str, nickname: str, phone: bool = False):
    context = (
        chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
        if phone
        else chromium.new_context(viewport={"width": 1280, "height": 800})
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.locator("#listen-nickname").fill(nickname)
    join = page.locator("#listen-join-button")
    join.tap() if phone else join.click()
    page.locator("#listen-test").wait_for(timeout=TIMEOUT_MS)
    assert not page.locator("#roundtrip-input").count()  # only the test: no upload, no lab, no results
    return page, errors


def _slots(store, link: str, page) -> dict[str, str]:
    key = next(c["value"] for c in page.context.cookies() if c["name"] == "cw_listener")
    info, who = store.listener(link, key)
    return shared_test.mushra_slots(info.seed, who.listener, 0, info.plan["conditions"])


def _rate(page, slots: dict[str, str], want: dict[str, int], phone: bool) -> None:
    page.wait_for_function("window.cwListen && window.cwListen.state().player.duration > 1", timeout=TIMEOUT_MS)
    _a_listeners_screen(page, phone)
    first = page.locator(".cw-rate-row button").first
    first.tap() if phone else first.click()  # switch to a sound in the transport
    assert page.evaluate("window.cwListen.state().player.source") == "s1"
    send = page.locator("#listen-send")
    assert send.is_disabled()  # every slider first
    for slider in page.locator(".cw-rate-row input[type=range]").all():
        value = want[slots[slider.get_attribute("data-handle")]]
        slider.evaluate("(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); }", value)
    play = page.locator(".cw-listen-player .cw-play")
    play.tap() if phone else play.click()  # a listener plays the sounds (the server sees them fetched) ...
    seconds = page.evaluate("window.cwListen.state().player.duration")
    page.wait_for_timeout(int(seconds * 1000) + 300)  # ... and hears the region once before sending
    box = send.bounding_box()
    assert box and box["y"] + box["height"] <= page.viewport_size["height"] * 3  # reachable by scrolling
    send.scroll_into_view_if_needed()
    send.tap() if phone else send.click()
    page.locator("#listen-status").filter(has_text="Thank you").wait_for(timeout=TIMEOUT_MS)
    assert not page.locator("#listen-intro").is_visible()  # the instructions go with the test


def _a_listeners_screen(page, phone: bool) -> None:
    """What a listener needs and no more: no loop box or zoom, the keys said only where there is a
    keyboard, each of the scale's words over its fifth of the slider, none overlapping the next."""
    assert not page.locator(".cw-listen .cw-loop").is_visible() and not page.locator(".cw-listen .cw-zoom").is_visible()
    status = page.locator("#listen-status").inner_text()
    assert ("Keys:" in status) != phone, status
    words = page.locator(".cw-scale-words span").all()
    slider = page.locator(".cw-rate-row input[type=range]").first.bounding_box()
    boxes = [w.bounding_box() for w in words]
    assert len(boxes) == 5 and all(b and b["height"] > 0 for b in boxes)
    for i, b in enumerate(boxes):
        fifth = (slider["x"] + slider["width"] * i / 5, slider["x"] + slider["width"] * (i + 1) / 5)
        centre = b["x"] + b["width"] / 2
        assert fifth[0] <= centre <= fifth[1], (i, b, slider)
    texts = page.evaluate("""() => [...document.querySelectorAll('.cw-scale-words span')].map((s) => {
      const r = document.createRange(); r.selectNodeContents(s); const b = r.getBoundingClientRect();
      return [b.left, b.right]; })""")  # the words' own ink, not their cells
    assert all(a[1] <= b[0] + 0.5 for a, b in zip(texts, texts[1:], strict=False)), texts


def test_the_room_rates_a_shared_mushra_test_and_the_owner_sees_it_pooled(chromium, app, tmp_path):
    url, store = app
    owner, link_url = _owner_shares(chromium, url, "mushra")
    link = link_url.rsplit("/", 1)[-1]
    local = f"{url}/listen/{link}"
    people = [("ann", GOOD, False), ("bob", dict(GOOD, reconstruction=76, opus6=52), True), ("cy", CARELESS, False)]
    for name, want, phone in people:
        page, errors = _listener(chromium, local, name, phone)
        _rate(page, _slots(store, link, page), want, phone)
        assert errors == []
        page.context.close()
    results = owner.locator("#share-results")
    results.filter(has_text="3 listeners, 2 kept").wait_for(timeout=30_000)  # arrives live: the timer
    text = results.inner_text()
    assert "the hidden reference rated 'excellent' (95 ± 0)" in text
    assert "rated 'good' (74 ± 25)" in text  # the codec: (72 + 76) / 2, t interval with 1 degree of freedom
    assert "too few listeners to conclude" in text  # 2 kept: shown, not concluded
    assert all(0 <= int(m) - int(w) and int(m) + int(w) <= 100 for m, w in re.findall(r"(\d+) ± (\d+)", text))
    assert "excluded: rated the hidden reference below 90" in text
    excluded = owner.locator("#share-results tr[data-state=excluded]")
    assert excluded.is_visible() and "cy" in excluded.inner_text()
    assert owner.locator("#share-results .cw-bar").count() == 5 and owner.locator(".cw-whisker").first.is_visible()
    owner.locator("#share-include input").check()  # the toggle: the excluded listener counted again
    results.filter(has_text="all included").wait_for(timeout=30_000)
    owner.locator("#share-include input").uncheck()
    results.filter(has_text="3 listeners, 2 kept").wait_for(timeout=30_000)
    owner.locator("#share-results").scroll_into_view_if_needed()
    owner.wait_for_timeout(500)
    shot = tmp_path / "listening.png"
    owner.locator("#share-results").screenshot(path=str(shot))
    _save_small(shot, SCREENSHOT)
    # the round trip's report: the zip and the page hold the shared test's results
    owner.get_by_role("tab", name="Round trip").click()
    owner.locator("#roundtrip-report").click()
    owner.locator("#roundtrip-report-files a").first.wait_for(timeout=TIMEOUT_MS)
    owner.wait_for_timeout(1500)  # the results are added as the files arrive
    hrefs = [a.get_attribute("href") for a in owner.locator("#roundtrip-report-files a").all()]
    paths = [Path(urllib.parse.unquote(h.split("file=", 1)[1])) for h in hrefs]
    zipped = next(p for p in paths if p.suffix == ".zip")
    with zipfile.ZipFile(zipped) as z:
        pooled = json.loads(z.read("listening-test.json"))
        rows = z.read("listening-test.csv").decode().splitlines()
    assert pooled["pooled"]["listeners"] == 3 and pooled["pooled"]["kept"] == 2
    assert len(rows) == 1 + 3 * 5 and "reconstruction" in "".join(rows)
    page_html = next(p for p in paths if p.suffix == ".html").read_text(encoding="utf-8")
    assert 'id="listening-test"' in page_html and "3 listeners, 2 kept" in html.unescape(page_html)
    owner.get_by_role("tab", name="Blind test").click()
    owner.locator("#share-close").click()
    results.filter(has_text="closed").wait_for(timeout=30_000)
    late = chromium.new_context().new_page()
    late.goto(local)
    late.locator("#listen-status").filter(has_text="closed").wait_for(timeout=TIMEOUT_MS)
    owner.context.close()


def test_the_room_takes_a_shared_abx_test(chromium, app):
    url, store = app
    owner, link_url = _owner_shares(chromium, url, "abx")
    link = link_url.rsplit("/", 1)[-1]
    for name, phone in (("ann", False), ("bob", True), ("cy", False)):
        page, errors = _listener(chromium, f"{url}/listen/{link}", name, phone)
        key = next(c["value"] for c in page.context.cookies() if c["name"] == "cw_listener")
        info, who = store.listener(link, key)
        plan = store.abx_plan(info, who)
        for trial, x in enumerate(plan):
            page.locator("#listen-status").filter(has_text=f"Trial {trial + 1} of").wait_for(timeout=TIMEOUT_MS)
            button = page.locator(f"#listen-answer-{x.lower()}")
            button.tap() if phone else button.click()
        page.locator("#listen-status").filter(has_text="Thank you").wait_for(timeout=TIMEOUT_MS)
        assert errors == []
        page.context.close()
    # answered as fast as a script (the test knows X): flagged, left out until the owner counts the excluded in
    owner.locator("#share-results").filter(has_text="12 answers could not come from listening").wait_for(timeout=30_000)
    owner.locator("#share-include input").check()
    owner.locator("#share-results").filter(has_text="3 listeners, 12 of 12 correct").wait_for(timeout=30_000)
    assert "the room can tell them apart" in owner.locator("#share-results").inner_text()
    owner.context.close()
