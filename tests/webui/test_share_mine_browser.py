"""The owner's shared tests survive a reload and a second test, in Debian's chromium: before a test
exists the panel shows neither *Close* nor *Export* (and ABX's trials only under ABX); the owner
shares a MUSHRA test and then an ABX test, reloads the page, finds both in *Your shared tests* with
the newest shown (its link, QR code and result), and reopens the first. Before, a reload left the
panel empty and a second test replaced the first one's view."""

from __future__ import annotations

import pytest

from tests.webui.shared_test_server import shared_test_server
from tests.webui.test_share_browser import chromium  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import CLIP, TIMEOUT_MS
from webui.i18n import text
from webui.tabs.shared_test_mine import STORAGE_KEY

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a round trip and two shared tests

IN_VIEW = """(selector) => {
  const el = document.querySelector(selector);
  if (!el) return false;
  el.scrollIntoView({block: 'center'});
  const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + Math.min(r.height / 2, 20));
  return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && !!hit && el.contains(hit);
}"""


@pytest.fixture(scope="module")
def app(tiny_checkpoint, tmp_path_factory):
    with shared_test_server(tiny_checkpoint, tmp_path_factory, "share-mine") as (url, _engine, _ui):
        yield url


def _share(page) -> str:
    before = page.locator("#share-url").inner_text() if page.locator("#share-url").count() else ""
    page.locator("#share-button").click()
    page.wait_for_function(
        "(b) => { const a = document.querySelector('#share-url'); return a && a.innerText && a.innerText !== b; }",
        arg=before,
        timeout=TIMEOUT_MS,
    )
    return page.locator("#share-url").inner_text()


def _kept(page, before: str | None) -> str:
    """Wait until the browser's storage of the owner's tests changes from ``before``; its new value."""
    page.wait_for_function("([k, v]) => localStorage.getItem(k) !== v", arg=[STORAGE_KEY, before], timeout=TIMEOUT_MS)
    return page.evaluate("k => localStorage.getItem(k)", STORAGE_KEY)


def test_the_owners_tests_survive_a_reload_and_a_second_test(chromium, app):  # noqa: F811
    page = chromium.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(app + "/")
    page.locator("#roundtrip-input input[type=file]").set_input_files(str(CLIP))
    page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
    page.locator("#roundtrip-run").click()
    page.locator("#roundtrip-verdict .cw-card").wait_for(timeout=TIMEOUT_MS)
    page.locator("#roundtrip-blind-run").click()
    page.locator("#abx-answer-a").wait_for(state="visible", timeout=TIMEOUT_MS)
    page.locator("#share-panel .label-wrap").first.click()
    page.locator("#share-button").wait_for(state="visible", timeout=TIMEOUT_MS)
    for nothing_yet in ("#share-close", "#share-csv-button", "#share-include", "#share-trials", "#share-mine"):
        assert not page.locator(nothing_yet).is_visible(), nothing_yet
    stored = page.evaluate("k => localStorage.getItem(k)", STORAGE_KEY)
    first = _share(page)
    stored = _kept(page, stored)  # the browser's list holds the new test (written after the link shows)
    page.locator("#share-close").wait_for(state="visible", timeout=TIMEOUT_MS)
    assert page.evaluate(IN_VIEW, "#share-close") and page.evaluate(IN_VIEW, "#share-mine")
    page.locator("#share-kind").get_by_text("ABX", exact=True).click()
    page.locator("#share-trials").wait_for(state="visible", timeout=TIMEOUT_MS)
    second = _share(page)
    assert second != first
    _kept(page, stored)  # a reload before the browser wrote its list would lose the second test
    page.reload()
    page.get_by_role("tab", name=text("abx.tab", "en")).click()  # the page opens on the round trip
    page.locator("#share-panel .label-wrap").first.wait_for(timeout=TIMEOUT_MS)
    page.locator("#share-panel .label-wrap").first.click()
    page.locator("#share-url").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#share-url").inner_text() == second  # the newest, shown again
    assert page.evaluate(IN_VIEW, "#share-results") and page.evaluate(IN_VIEW, "#share-link .cw-share-qr")
    page.locator("#share-mine input").click()
    options = page.locator("ul.options li")
    options.first.wait_for(timeout=TIMEOUT_MS)
    texts = options.all_inner_texts()
    assert len(texts) == 2 and "ABX" in texts[0] and "MUSHRA" in texts[1], texts
    options.nth(1).click()
    page.wait_for_function(
        "(u) => (document.querySelector('#share-url') || {}).innerText === u", arg=first, timeout=TIMEOUT_MS
    )
    assert page.evaluate(IN_VIEW, "#share-results")
    page.context.close()
