"""A shared test's link and QR code name an address the room's phones can open, in Debian's
chromium. The app listens on every interface and the owner opens it at 127.0.0.1 (the issue's
case: the QR code said http://127.0.0.1:7911/listen/…): the link and the QR code name this
machine's address, the page says why, and a listener's browser opens the link at that address.
The app on loopback only (the default): the link comes with a warning, in the viewport and not
covered, in Chinese on a phone."""

from __future__ import annotations

import re

import pytest

from tests.webui.shared_test_server import shared_test_server
from tests.webui.test_share_browser import chromium  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import CLIP, TIMEOUT_MS
from webui.i18n import text
from webui.serving import share_link
from webui.tabs.shared_test import link_html

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # two servers, a round trip and a share each

SEEN = """(selector) => {
  const el = document.querySelector(selector);
  el.scrollIntoView({block: 'center'});
  const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return {text: el.innerText, inside: r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.right <= innerWidth,
          uncovered: !!hit && el.contains(hit)};
}"""


def _seen(page, selector: str) -> dict:
    """SEEN once the page has settled: the result's own scroll (webui/static/to_result.js) may still
    move the page for a moment after the link shows; at most 3 s."""
    for _ in range(15):
        seen = page.evaluate(SEEN, selector)
        if seen["inside"] and seen["uncovered"]:
            return seen
        page.wait_for_timeout(200)
    return seen


def _share(page) -> str:
    """Round trip, *Blind-test this clip*, then *Share with listeners*: the link shown."""
    page.locator("#roundtrip-input input[type=file]").set_input_files(str(CLIP))
    page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
    page.locator("#roundtrip-run").click()
    page.locator("#roundtrip-verdict .cw-card").wait_for(timeout=TIMEOUT_MS)
    page.locator("#roundtrip-blind-run").click()
    page.locator("#abx-answer-a").wait_for(state="visible", timeout=TIMEOUT_MS)
    page.locator("#share-panel .label-wrap").first.click()
    page.locator("#share-button").click()
    page.locator("#share-url").wait_for(timeout=TIMEOUT_MS)
    return page.locator("#share-url").inner_text()


def test_a_page_opened_at_loopback_shares_this_machines_address(chromium, tiny_checkpoint, tmp_path_factory):  # noqa: F811
    address = share_link.machine_address()
    if address is None:
        pytest.skip("this machine has no address beyond loopback to listen on")
    with shared_test_server(tiny_checkpoint, tmp_path_factory, "link-any", host="0.0.0.0") as (url, _engine, _ui):
        port = url.rsplit(":", 1)[1]
        page = chromium.new_context(viewport={"width": 1440, "height": 900}).new_page()
        page.goto(f"http://127.0.0.1:{port}/")
        link = _share(page)
        assert link.startswith(f"http://{address}:{port}/listen/"), link
        note = _seen(page, "#share-link .cw-share-note")
        assert address in note["text"] and "127.0.0.1" in note["text"] and note["inside"] and note["uncovered"]
        qr = page.locator("#share-link .cw-share-qr svg path")  # the drawing, not its box
        assert qr.is_visible() and qr.bounding_box()["height"] >= 200  # readable from across a room
        drawn = page.locator("#share-link .cw-share-qr svg path").get_attribute("d")
        assert drawn == re.search(r' d="([^"]+)"', link_html(link, "en")).group(1)  # the QR code of exactly that link
        phone = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True).new_page()
        phone.goto(link)  # the listener's browser, at this machine's address
        phone.locator("#listen-nickname").wait_for(timeout=TIMEOUT_MS)
        phone.context.close()
        page.context.close()


def test_a_loopback_only_app_warns_beside_the_link(chromium, tiny_checkpoint, tmp_path_factory):  # noqa: F811
    with shared_test_server(tiny_checkpoint, tmp_path_factory, "link-loopback") as (url, _engine, _ui):
        context = chromium.new_context(
            viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, locale="zh-CN"
        )
        page = context.new_page()
        page.goto(url + "/")
        link = _share(page)
        assert link.startswith(url + "/listen/")
        warning = _seen(page, "#share-link .cw-share-warning")
        assert warning["inside"] and warning["uncovered"], warning
        assert text("share.link_loopback", "zh-CN", seen=url)[:12] in warning["text"], warning["text"]
        assert page.locator("#share-link [role=alert]").count() == 1
        context.close()
