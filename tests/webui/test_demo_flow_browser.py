"""The demo flow of issue 20 in Debian's chromium, nothing of the page faked: the order of the page
on a desktop and a phone (element positions), keys on the Blind test tab leave the lab alone, a
blind test started from a result's worst moment, a touch-drag loop and a pinch zoom on the phone, a
0.2 s clip reaching the lab, axe-core (no serious or critical violation) in English, Chinese and the
dark theme, and no English sentence on the Chinese result page or its report. One browser and the
session's server for the whole module. Saves docs/roundtrip.png, docs/phone.png, docs/result-zh.png."""

from __future__ import annotations

import html
import re
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
import soundfile as sf

from tests.conftest import speechlike
from tests.webui.english import english_sentences
from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS, CLIP, REPO, TIMEOUT_MS, _save_small
from webui.app import TITLE
from webui.i18n import text

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a whole flow in chromium: make test-slow (CI runs it)

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"  # package.json pins it; make test runs npm ci
DOCS = REPO / "docs"
LAB = "window.cwPlayer.state()"
ABX = "window.cwAbx.state()"
FLOW = (  # the page's order, top to bottom, once there is a result
    "#roundtrip-input",
    "#roundtrip-verdict",
    "#lab-player",
    "#roundtrip-blind-run",
    "#roundtrip-details",
)
DESKTOP_HEIGHT_MAX_PX = 2400  # with a result, details folded (the page was 4,041 px before issue 20)


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


def _open(chromium, url: str, **context):
    page = chromium.new_context(**context).new_page()
    page._cw_errors = []  # uncaught script errors of the page: there must be none
    page.on("pageerror", lambda error: page._cw_errors.append(f"{error} {getattr(error, 'stack', '')[:300]}"))
    page.goto(url)
    page.locator("#status-bar .cw-status").wait_for(timeout=TIMEOUT_MS)
    return page


def _round_trip(page, clip: Path = CLIP) -> None:
    """Upload, Encode → Decode, and wait for the final verdict and the player."""
    page.locator("#roundtrip-input input[type=file]").set_input_files(str(clip))
    page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
    page.locator("#roundtrip-run").click()
    page.locator("#roundtrip-verdict [data-state=final]").wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function(
        f"window.cwPlayer && {LAB}.sources.includes('residual')", timeout=TIMEOUT_MS
    )  # the full manifest


def _tops(page, selectors) -> list[float]:
    """Each element's top, in page coordinates."""
    return [page.eval_on_selector(s, "e => e.getBoundingClientRect().top + window.scrollY") for s in selectors]


IN_VIEW = """(selector) => {
  const el = document.querySelector(selector);
  const r = el ? el.getBoundingClientRect() : null;
  if (!r || r.height === 0 || r.top < 0 || r.bottom > innerHeight) return false;
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + Math.min(r.height / 2, 20));
  return !!hit && el.contains(hit);
}"""  # in the viewport and not covered, without scrolling: what a person sees

SETTLED = """() => ![...document.querySelectorAll('[data-testid=status-tracker]')]
    .some(e => !e.classList.contains('hide') && e.getClientRects().length) && !document.querySelector('.pending')"""


def _axe(page) -> list[dict]:
    """axe-core's serious and critical violations on the page once nothing on it is loading (a
    component that waits for an event is drawn faded on purpose)."""
    assert AXE.is_file(), f"{AXE} is missing: run `make test` (npm ci installs the pinned axe-core)"
    page.wait_for_function(SETTLED, timeout=TIMEOUT_MS, polling=500)
    # Gradio sets document.title from the app's title in an effect of its own; on a loaded CI machine
    # axe once ran before it (document-title, CI of stop 24). The page must get the title, so wait.
    page.wait_for_function(f"document.title === {TITLE!r}", timeout=TIMEOUT_MS, polling=200)
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))"""
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


@pytest.fixture(scope="module")
def desktop(chromium, server):
    """A desktop page (1440 × 900) with a round trip done; ``before``: what showed before it."""
    page = _open(chromium, server[0], viewport={"width": 1440, "height": 900})
    before = {
        selector: page.locator(selector).is_visible()
        for selector in ("#roundtrip-result", "#roundtrip-report", "#lab-ladder-run", "#roundtrip-blind-run")
    }
    _round_trip(page)
    yield SimpleNamespace(page=page, before=before)
    page.context.close()


def test_flow_order_on_the_desktop(desktop):
    page = desktop.page
    assert not any(desktop.before.values()), desktop.before  # nothing of a result, no button needing one
    tops = _tops(page, FLOW)
    assert tops == sorted(tops), dict(zip(FLOW, tops, strict=True))
    assert page.locator("#roundtrip-run").bounding_box()["y"] < tops[1]
    page.wait_for_function(IN_VIEW, arg="#lab-player .cw-play", timeout=5000)  # the page scrolled to the card by
    assert page.evaluate(IN_VIEW, "#roundtrip-verdict .cw-card")  # itself: the card and the player's controls show
    assert not page.locator("#roundtrip-spectrogram").is_visible()  # the details are folded
    assert page.locator("#roundtrip-report").is_enabled()  # the verdict is in: the report can be made
    card = page.locator("#roundtrip-verdict .cw-card")
    assert card.get_attribute("data-level") in ("green", "amber", "red")
    assert 1 <= card.locator(".cw-reasons li").count() <= 3
    assert card.locator(".cw-card-caveat").is_visible()  # random weights: the caveat is on the card
    card.locator(".cw-numbers summary").click()  # the numbers, one click away
    assert card.locator(".cw-numbers table").is_visible()
    assert "DistillMOS" in card.inner_text() and "STOI" in card.inner_text()
    assert page._cw_errors == []
    height = page.evaluate("document.documentElement.scrollHeight")
    print(f"page height with a result, 1440 x 900: {height} px")
    assert height <= DESKTOP_HEIGHT_MAX_PX
    card.locator(".cw-numbers summary").click()
    shot = DOCS / "roundtrip.tmp.png"
    page.screenshot(path=str(shot), full_page=True)
    _save_small(shot, DOCS / "roundtrip.png")
    shot.unlink()


def test_axe_finds_nothing_serious_on_the_result_page(desktop):
    assert _axe(desktop.page) == []


def test_keys_on_the_blind_test_tab_leave_the_lab_unchanged(desktop):
    page = desktop.page
    page.locator("#lab-player .cw-play").click()
    page.wait_for_function(f"{LAB}.playing && {LAB}.time > 0.2", timeout=10_000)
    page.get_by_role("tab", name="Blind test").click()
    page.wait_for_function(f"!{LAB}.playing", timeout=5_000)  # leaving the tab paused it
    before = page.evaluate(LAB)
    for key in (" ", "b", "r", "l", "2", "+", "a"):
        page.keyboard.press(key)
    page.wait_for_timeout(300)
    after = page.evaluate(LAB)
    keep = ("source", "playing", "loop", "time", "view", "residualOf")
    assert {k: after[k] for k in keep} == {k: before[k] for k in keep}
    page.get_by_role("tab", name="Round trip").click()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("b")  # and on its own tab the lab hears them
    assert page.evaluate(LAB)["source"] == "reconstruction"
    page.keyboard.press("a")


def test_a_blind_test_started_from_a_worst_moment(desktop):
    page = desktop.page
    worst, duration = page.evaluate(
        "[window.cwPlayer.manifest.timeline.worst[0].time_s, window.cwPlayer.manifest.duration_s]"
    )
    start = max(0.0, min(worst - 1.5, duration - 3.0))
    page.locator("#roundtrip-blind-what").get_by_text("Worst moment 1").click()
    page.locator("#roundtrip-blind-run").click()
    page.wait_for_function(
        f"window.cwAbx && {ABX}.sources.join() === 'a,b,x' && {ABX}.duration > 0", timeout=TIMEOUT_MS
    )
    assert page.get_by_role("tab", name="Blind test").get_attribute("aria-selected") == "true"
    assert page.evaluate(ABX)["duration"] == pytest.approx(3.0, abs=0.01)  # 3 s around the moment, no upload
    assert f"{start:.1f} s to {start + 3:.1f} s (worst moment 1)" in page.locator("#abx-clip").inner_text()
    assert page.locator("#abx-answer-a").is_visible() and not page.locator("#abx-again-fewer").is_visible()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press(" ")
    page.wait_for_function(f"{ABX}.playing && {ABX}.audible === 'a'", timeout=10_000)
    *_, old, new = page.evaluate(  # key 3: X at the same moment, in the same transport (read in the same task)
        f"() => {{ document.dispatchEvent(new KeyboardEvent('keydown', {{key: '3', bubbles: true}})); return {ABX}.voices; }}"
    )
    assert new["id"] == "x" and new["from"] == pytest.approx(old["from"] + new["when"] - old["when"], abs=1e-6)
    page.wait_for_function(f"{ABX}.audible === 'x'", timeout=10_000)
    page.keyboard.press(" ")
    for n in range(1, 11):  # the default ten trials, answered with the keyboard
        page.locator("#abx-prompt").filter(has_text=f"Trial {n} of 10").wait_for(timeout=TIMEOUT_MS)
        page.keyboard.press("a")
    page.locator("#abx-results").filter(has_text="of 10:").wait_for(timeout=TIMEOUT_MS)
    again = page.locator("#abx-again-fewer")
    again.wait_for(timeout=TIMEOUT_MS)
    assert not page.locator("#abx-answer-a").is_visible()  # answer buttons only while a test runs
    assert "k = 8" in again.inner_text()
    assert "as B" in page.locator("#abx-again-other").inner_text()  # or against a reference codec
    again.click()  # one click: the same region, B with fewer codebooks
    page.locator("#abx-prompt").filter(has_text="Trial 1 of 10").wait_for(timeout=TIMEOUT_MS)
    page.locator("#abx-answer-a").wait_for(timeout=TIMEOUT_MS)
    assert "8 of 16 codebooks" in page.locator("#abx-references").inner_html()
    page.wait_for_function(f"{ABX}.duration > 0", timeout=TIMEOUT_MS)  # the new sounds' headers read
    assert page.evaluate(ABX)["duration"] == pytest.approx(3.0, abs=0.01)


@pytest.fixture(scope="module")
def phone(chromium, server):
    """A phone (390 × 844, touch) before and after a round trip."""
    page = _open(chromium, server[0], viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    yield page
    page.context.close()


def _touch(page, kind: str, points: list[tuple[float, float]]) -> None:
    """A real touch event through Chromium's input pipeline (DevTools protocol)."""
    cdp = getattr(page, "_cw_cdp", None) or page.context.new_cdp_session(page)
    page._cw_cdp = cdp
    touches = [{"x": x, "y": y, "id": i} for i, (x, y) in enumerate(points)]
    cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": touches})


def test_the_phone_first_screen_and_every_tab(phone):
    for selector in ("#roundtrip-input", "#roundtrip-run"):
        box = phone.locator(selector).bounding_box()
        assert box["y"] + box["height"] <= 844, (selector, box)  # on the first screen
    tabs = phone.get_by_role("tab")
    assert tabs.count() >= 6  # every tab is in the tab list: none behind a "…" menu
    for i in range(tabs.count()):
        box = tabs.nth(i).bounding_box()
        assert tabs.nth(i).is_visible() and box["x"] >= 0 and box["x"] + box["width"] <= 390
        uncovered = tabs.nth(i).evaluate(  # its top, middle and bottom are its own, not the banner's or the input's
            """(el) => { const r = el.getBoundingClientRect(), x = r.x + r.width / 2;
               return [r.top + 3, r.top + r.height / 2, r.bottom - 3].every((y) => el.contains(document.elementFromPoint(x, y))); }"""
        )
        assert uncovered, (tabs.nth(i).inner_text(), box)
    shot = DOCS / "phone.tmp.png"
    phone.screenshot(path=str(shot))
    _save_small(shot, DOCS / "phone.png")
    shot.unlink()
    for i in range(tabs.count()):  # each tab reachable with a finger, and no raw translation token on it
        tabs.nth(i).tap()
        phone.wait_for_timeout(300)
        assert tabs.nth(i).get_attribute("aria-selected") == "true"
        assert "translation_metadata" not in phone.locator("body").inner_text()
    tabs.first.tap()


def test_the_phone_flow_tables_and_touch(phone):
    _round_trip(phone)
    tops = _tops(phone, FLOW)
    assert tops == sorted(tops)
    print(f"page height with a result, 390 x 844: {phone.evaluate('document.documentElement.scrollHeight')} px")
    phone.locator("#roundtrip-details").get_by_text("Details").first.click()
    phone.locator("#roundtrip-metrics table").wait_for(timeout=TIMEOUT_MS)
    lines = phone.eval_on_selector_all(  # no word broken across lines in the metrics table's cells
        "#roundtrip-metrics td:first-child, #roundtrip-metrics th",
        """cells => cells.map(c => { const r = document.createRange(); r.selectNodeContents(c);
            return [c.innerText, new Set([...r.getClientRects()].map(b => Math.round(b.top))).size]; })""",
    )
    assert lines and max(n for _text, n in lines) == 1, [line for line in lines if line[1] > 1]
    wave = phone.locator("#lab-player canvas.cw-wave")
    wave.scroll_into_view_if_needed()
    box = wave.bounding_box()
    y, duration = box["y"] + box["height"] / 2, phone.evaluate(f"{LAB}.duration")
    _touch(phone, "touchStart", [(box["x"] + 0.2 * box["width"], y)])
    for step in range(1, 9):  # a finger drawn from 20 % to 60 % of the waveform
        _touch(phone, "touchMove", [(box["x"] + (0.2 + 0.05 * step) * box["width"], y)])
    _touch(phone, "touchEnd", [])
    loop = phone.evaluate(LAB)["loop"]
    assert loop["on"] and loop["a"] == pytest.approx(0.2 * duration, abs=0.03 * duration)
    assert loop["b"] == pytest.approx(0.6 * duration, abs=0.03 * duration)
    middle = box["x"] + box["width"] / 2
    _touch(phone, "touchStart", [(middle - 20, y), (middle + 20, y)])
    for step in range(1, 9):  # two fingers spread apart: zoom in
        _touch(phone, "touchMove", [(middle - 20 - 12 * step, y), (middle + 20 + 12 * step, y)])
    _touch(phone, "touchEnd", [])
    view = phone.evaluate(LAB)["view"]
    assert view["b"] - view["a"] < duration / 2


def test_the_chinese_result_page_and_its_report_have_no_english_sentence(chromium, server):
    page = _open(chromium, server[0], viewport={"width": 1440, "height": 900}, locale="zh-CN")
    _round_trip(page)
    page.locator("#roundtrip-details .label-wrap").first.click()
    page.locator("#lab-compare-table table").wait_for(timeout=TIMEOUT_MS)  # every source side by side...
    page.wait_for_function(  # ...with their DistillMOS too, so that the report carries the whole table
        "!document.querySelector('#lab-compare-table').innerText.includes('DistillMOS……')", timeout=TIMEOUT_MS
    )
    page.locator("#roundtrip-report").click()
    link = page.locator("#roundtrip-report-files a[href$='.html']").first
    link.wait_for(timeout=TIMEOUT_MS)
    page.evaluate(
        "document.querySelectorAll('#status-bar details, #roundtrip-verdict details').forEach(d => d.open = true)"
    )
    page.wait_for_timeout(500)
    shown = page.locator("body").inner_text()
    assert "接近原始音频" in shown or "劣化" in shown  # the verdict, in Chinese
    left = english_sentences(shown)
    assert left == [], [shown[max(0, shown.find(w) - 80) : shown.find(w) + 80] for w in left]
    with urllib.request.urlopen(link.evaluate("a => a.href"), timeout=30) as response:
        report = response.read().decode("utf-8")
    words = html.unescape(re.sub(r"<style.*?</style>|data:[\w/+-]+;base64,[\w+/=]+|<[^>]+>", " ", report, flags=re.S))
    assert 'lang="zh-CN"' in report and "编解码器工作台报告" in report
    assert text("compare.report.table", "zh-CN") in report  # the table of every source is in it
    assert page._cw_errors == []
    left = english_sentences(words)
    assert left == [], [words[max(0, words.find(w) - 80) : words.find(w) + 80] for w in left]
    assert _axe(page) == []
    page.evaluate(
        "document.querySelectorAll('#status-bar details, #roundtrip-verdict details').forEach(d => d.open = false)"
    )
    page.locator("#roundtrip-details .label-wrap").first.click()  # folded again, as a reader finds it
    page.wait_for_timeout(500)
    shot = DOCS / "result-zh.tmp.png"
    page.screenshot(path=str(shot), full_page=True)
    _save_small(shot, DOCS / "result-zh.png")
    shot.unlink()
    page.context.close()


def test_dark_theme_axe_and_a_02s_clip_reaching_the_lab(chromium, server, tmp_path):
    page = _open(chromium, server[0] + "?__theme=dark", viewport={"width": 1440, "height": 900})
    _round_trip(page)
    assert page.evaluate("document.body.classList.contains('dark')")
    assert _axe(page) == []
    random = page.locator("#cw-random")  # the random-weights warning stays readable in the dark
    colours = random.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
    assert colours[0] != colours[1]
    short = tmp_path / "short 0.2s.wav"
    sf.write(short, speechlike(0.2), 24_000, subtype="PCM_16")
    page.locator("#roundtrip-input button[aria-label='Clear'], #roundtrip-input button[title='Clear']").first.click()
    _round_trip(page, short)
    page.wait_for_function(f"{LAB}.duration > 0 && {LAB}.duration < 0.3", timeout=TIMEOUT_MS)
    # the player's first look comes before the timeline: wait for the manifest that carries it
    page.wait_for_function("window.cwPlayer && window.cwPlayer.manifest && window.cwPlayer.manifest.timeline")
    assert page.evaluate("window.cwPlayer.manifest.timeline.too_short_for_worst")
    assert "too short" in page.locator("#lab-player .cw-worst").inner_text()
    page.locator("#lab-player .cw-play").click()
    page.wait_for_function(f"{LAB}.playing || {LAB}.time > 0", timeout=10_000)  # it plays
    page.context.close()


SEEN_ON_PHONE = """(ids) => ids.map((id) => {
  const el = document.querySelector(id), r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  let clipped = false;
  for (let a = el.parentElement; a; a = a.parentElement) {
    const s = getComputedStyle(a), b = a.getBoundingClientRect();
    if (s.overflow !== "visible" && (r.top < b.top - 1 || r.bottom > b.bottom + 1)) clipped = true;
  }
  return {id, height: r.height, top: r.top, bottom: r.bottom, inside: r.top >= 0 && r.bottom <= innerHeight,
          uncovered: !!hit && el.contains(hit), clipped};
})"""


def test_the_phone_blind_test_shows_both_answers_on_its_first_screen(phone):
    """Issue 29, item 9: the answer buttons were under an empty 106 px waveform box, below the first
    screen (A at y = 911 of 844). Run after the phone flow above (it leaves a result)."""
    if not phone.locator("#roundtrip-blind-run").is_visible():
        _round_trip(phone)
    phone.locator("#roundtrip-blind-run").scroll_into_view_if_needed()
    phone.locator("#roundtrip-blind-run").tap()
    phone.locator("#abx-answer-b").wait_for(state="visible", timeout=TIMEOUT_MS)
    phone.wait_for_timeout(800)
    seen = phone.evaluate(SEEN_ON_PHONE, ["#abx-prompt", "#abx-answer-a", "#abx-answer-b"])
    for box in seen:
        assert box["height"] > 0 and box["inside"] and box["uncovered"] and not box["clipped"], seen
    track = phone.locator("#abx-transport canvas.cw-wave").bounding_box()
    assert track["height"] <= 60, track  # a thin track: no empty waveform box
    assert not phone.locator("#abx-keys").is_visible()  # a touch phone has no keys: no key legend (issue 29, item 9)
    phone.screenshot(path=str(DOCS / "abx-phone.tmp.png"))
    _save_small(DOCS / "abx-phone.tmp.png", DOCS / "abx-phone.png")
    (DOCS / "abx-phone.tmp.png").unlink()
    phone.get_by_role("tab").first.tap()
