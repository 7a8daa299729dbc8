"""The presenter view in Debian's chromium: *Presenter view* (top right of the intro, in the viewport,
not covered) folds away the engineer's tabs and figures; the audience sees Round trip, Live and Blind
test, the codec's result without dB gains, key hints or the device line. The choice survives a
reload; ``?view=presenter`` opens a page in it; pressing again shows every tool. English at
1440 × 900, Chinese on a 390 × 844 touch phone. The count of what a first-time visitor sees (tabs,
controls) is printed for both views. Saves docs/presenter.png under ``make screenshots``."""

from __future__ import annotations

import pytest

from tests.webui.test_demo_flow_browser import _open, _round_trip, chromium  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import REPO, _save_small
from webui.i18n import text

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a round trip in each view

SCREENSHOT = REPO / "docs" / "presenter.png"
ALL_TABS = 9  # Round trip, Live, Blind test, Evaluate, Check a port, Fine-tune, Encode, Decode, System
AUDIENCE_TABS = ("roundtrip", "live", "abx")

SEEN = """(selector) => {
  const el = document.querySelector(selector);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return {text: el.innerText, pressed: el.getAttribute('aria-pressed'),
          inside: r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth,
          uncovered: !!hit && el.contains(hit)};
}"""
COUNT = """() => {
  const shown = (e) => !!e.offsetParent && getComputedStyle(e).visibility !== 'hidden';
  const tabs = [...document.querySelectorAll('.tab-wrapper [role="tablist"] button[role="tab"]')].filter(shown);
  const controls = [...document.querySelectorAll('button, input, select, textarea, [role="tab"], a[href]')]
    .filter(shown).filter((e) => !e.closest('.tab-container[aria-hidden="true"]'));
  return {tabs: tabs.map((b) => b.dataset.tabId), controls: controls.length};
}"""


def _view(page) -> dict:
    return page.evaluate(COUNT)


@pytest.mark.parametrize(
    ("lang", "context"),
    [
        ("en", {"viewport": {"width": 1440, "height": 900}, "locale": "en-US"}),
        ("zh-CN", {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "locale": "zh-CN"}),
    ],
)
def test_the_presenter_view_folds_the_engineers_tools_and_keeps_the_codec(chromium, server, lang, context, tmp_path):  # noqa: F811
    page = _open(chromium, server[0] + "?view=all", **context)
    toggle = page.evaluate(SEEN, "#cw-view-toggle")
    assert toggle and toggle["text"] == text("view.presenter", lang) and toggle["pressed"] == "false", toggle
    assert toggle["inside"] and toggle["uncovered"], toggle
    every = _view(page)
    assert len(every["tabs"]) == ALL_TABS or context.get("is_mobile"), every  # a phone puts some in a menu

    tap = bool(context.get("has_touch"))
    button = page.locator("#cw-view-toggle")
    button.tap() if tap else button.click()
    page.wait_for_function("document.querySelector('#cw-view-toggle').getAttribute('aria-pressed') === 'true'")
    folded = _view(page)
    assert tuple(folded["tabs"]) == AUDIENCE_TABS, folded
    assert folded["controls"] < every["controls"]
    print(
        f"\n[{lang}] first screen: {len(every['tabs'])} tabs, {every['controls']} controls; presenter view: "
        f"{len(folded['tabs'])} tabs, {folded['controls']} controls"
    )
    status = page.evaluate(SEEN, "#status-bar summary")
    assert status and "MiB" not in status["text"] and "float32" not in status["text"], status

    _round_trip(page)  # the codec's result, as the audience sees it
    page.wait_for_function(  # the page brings the card and the player's controls into view by itself
        f"() => {{ const s = ({SEEN})('#lab-player .cw-play'); return s && s.inside && s.uncovered; }}", timeout=5000
    )
    assert page.evaluate(SEEN, "#roundtrip-verdict .cw-card")["uncovered"]
    sources = page.locator("#lab-player .cw-source")
    assert sources.count() >= 3 and all("dB" not in t for t in sources.all_inner_texts())
    assert not page.locator("#lab-heading").is_visible() and not page.locator("#roundtrip-details").is_visible()
    moments = page.locator("#lab-player .cw-moment")  # the worst moments stay, as times to play
    assert moments.count() and moments.first.is_visible() and "dB" not in moments.first.inner_text()
    assert not page.locator("#lab-player canvas.cw-tl").is_visible()  # the curves of log-mel and SNR fold away
    card = page.locator("#roundtrip-verdict .cw-card")
    assert card.is_visible()
    if lang == "en":
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(tmp_path / "presenter.png"), full_page=True)
        _save_small(tmp_path / "presenter.png", SCREENSHOT)

    page.goto(server[0])  # the choice is this browser's (an address's ?view= would win over it)
    page.locator("#cw-view-toggle").wait_for()
    page.wait_for_function("document.body.classList.contains('cw-presenter')")
    assert tuple(_view(page)["tabs"]) == AUDIENCE_TABS
    button = page.locator("#cw-view-toggle")
    button.tap() if tap else button.click()  # every tool again
    page.wait_for_function("!document.body.classList.contains('cw-presenter')")
    assert len(_view(page)["tabs"]) == len(every["tabs"])
    assert page._cw_errors == []
    page.context.close()


def test_an_address_with_view_presenter_opens_in_it(chromium, server):  # noqa: F811
    page = _open(chromium, server[0] + "?view=presenter", viewport={"width": 1440, "height": 900})
    page.wait_for_function("document.body.classList.contains('cw-presenter')")
    assert tuple(_view(page)["tabs"]) == AUDIENCE_TABS
    assert page.evaluate(SEEN, "#cw-view-toggle")["pressed"] == "true"
    page.context.close()
