"""Same voice? on the verdict card in Debian's chromium, as a person sees it: after a round trip the
card says in words whether it sounds like the same speaker, on a line of its own, in the viewport,
not clipped, not covered; one click opens the numbers, where the speaker-similarity row and the
anchors' values beside it ("Phone call (AMR-NB 12.2 kbit/s): 0.81") are seen too. At 1440 x 900,
on a 390 x 844 touch phone, and in a zh-CN browser. Saves docs/voice-card.png and
docs/voice-card-phone.png (numbers open)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webui.test_parity_browser import SEEN
from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS, CLIP, REPO, TIMEOUT_MS, _save_small

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a whole flow in chromium: make test-slow (CI runs it)

SAID = {  # the card's plain words about the voice, each light (webui/locales/*/metrics.json)
    "en-US": ("It sounds like the same speaker.", "The voice changes noticeably.", "It may sound like a different"),
    "zh-CN": ("听起来是同一个说话人。", "声音有明显变化。", "听起来可能像另一个说话人。"),
}
BESIDE = {"en-US": "Anchors on this clip: ", "zh-CN": "本片段上的参照编解码器："}
PHONE_CALL = {"en-US": "Phone call", "zh-CN": "电话"}


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def _round_trip(browser, server, locale: str, viewport: tuple[int, int], touch: bool):
    context = browser.new_context(
        viewport={"width": viewport[0], "height": viewport[1]}, locale=locale, has_touch=touch, is_mobile=touch
    )
    page = context.new_page()
    page.goto(server[0])
    page.locator("#roundtrip-input input[type=file]").set_input_files(str(CLIP))
    page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
    page.locator("#roundtrip-run").click()
    page.locator("#roundtrip-verdict [data-state=final]").wait_for(timeout=TIMEOUT_MS)
    page.locator("#roundtrip-verdict tr.cw-beside[data-beside='SIM-GE2E']").wait_for(
        state="attached", timeout=TIMEOUT_MS
    )  # the table of every source is in: the card now carries the anchors' values
    return context, page


def _check(page, locale: str) -> str:
    from playwright.sync_api import expect

    card = page.locator("#roundtrip-verdict .cw-card")
    voice = card.locator(".cw-card-alone[data-metric='SIM-GE2E']")
    expect(voice).to_have_count(1)
    said = voice.inner_text().strip()
    assert any(said.startswith(words) for words in SAID[locale]), said  # one of the three plain sentences
    assert voice.evaluate(SEEN) == "seen"
    summary = card.locator(".cw-numbers summary")
    summary.click()  # the number, one click away
    row = card.locator(".cw-numbers tr[data-metric='SIM-GE2E']")
    expect(row).to_be_visible()
    assert row.evaluate(SEEN) == "seen"
    value = row.locator("td").first.inner_text()
    assert 0.0 <= float(value) <= 1.0, value
    beside = card.locator(".cw-numbers tr.cw-beside[data-beside='SIM-GE2E'] td")
    assert beside.evaluate(SEEN) == "seen"
    words = beside.inner_text()
    assert words.startswith(BESIDE[locale]) and PHONE_CALL[locale] in words, words
    box, view = beside.bounding_box(), page.viewport_size
    assert box["x"] >= 0 and box["x"] + box["width"] <= view["width"] + 1, (box, view)  # wraps, never runs off
    table = card.locator(".cw-numbers table")  # nothing of the numbers hides to the right (a phone stacks them)
    assert table.evaluate("t => t.scrollWidth - t.clientWidth") <= 1
    inside = "(el) => { const t = el.closest('table').getBoundingClientRect(), r = el.getBoundingClientRect(); return r.right <= t.right + 1; }"
    assert beside.evaluate(inside) and card.locator(".cw-numbers tr[data-metric='SIM-GE2E'] td").last.evaluate(inside)
    return said


def test_the_voice_in_words_and_its_number_with_the_anchors_at_1440_and_in_chinese(browser, server, tmp_path):
    context, page = _round_trip(browser, server, "en-US", (1440, 900), False)
    _check(page, "en-US")
    page.locator("#roundtrip-verdict").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -80)")
    shot = tmp_path / "voice-card.png"
    page.screenshot(path=str(shot))
    _save_small(shot, REPO / "docs" / "voice-card.png")
    context.close()
    context, page = _round_trip(browser, server, "zh-CN", (1440, 900), False)
    _check(page, "zh-CN")
    context.close()


def test_the_voice_in_words_on_a_phone(browser, server, tmp_path):
    context, page = _round_trip(browser, server, "en-US", (390, 844), True)
    _check(page, "en-US")
    page.locator("#roundtrip-verdict .cw-numbers tr.cw-beside[data-beside='SIM-GE2E']").scroll_into_view_if_needed()
    shot = tmp_path / "voice-card-phone.png"
    page.screenshot(path=str(shot))
    _save_small(shot, REPO / "docs" / "voice-card-phone.png")
    context.close()
