"""Issue 29, item 3, in Debian's chromium: an anchor ticked once a result is on screen joins that
result (the player gets it, the table of every source gets its column) without a new round trip
(no second token file, the same reconstruction). Before the issue ticking did nothing until a
full re-run: this test failed there."""

from __future__ import annotations

import pytest

from tests.webui.test_demo_flow_browser import LAB, _open, _round_trip, chromium  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import TIMEOUT_MS

pytestmark = pytest.mark.browser


def test_a_ticked_anchor_joins_the_result_on_screen(chromium, server):  # noqa: F811
    page = _open(chromium, server[0], viewport={"width": 1440, "height": 900})
    _round_trip(page)
    before = page.evaluate(LAB)
    assert "mp3" not in before["sources"]
    path_of = "window.cwPlayer.manifest.sources.find(s => s.id === 'reconstruction').path"
    reconstruction = page.evaluate(path_of)
    page.locator("#roundtrip-compare").get_by_text("Compare with known codecs").first.click()
    page.locator("#roundtrip-anchors").get_by_text("MP3 32 kbit/s").click()
    page.wait_for_function(f"{LAB}.sources.includes('mp3')", timeout=TIMEOUT_MS, polling=200)
    after = page.evaluate(LAB)
    assert [s for s in before["sources"] if s != "residual"] == [
        s for s in after["sources"] if s not in ("mp3", "residual")
    ]
    page.locator("#roundtrip-details").get_by_text("Details").first.click()  # the table is in the folded details
    table = page.locator("#lab-compare-table")
    page.wait_for_function(
        "(document.querySelector('#lab-compare-table') || {innerText: ''}).innerText.includes('MP3')",
        timeout=TIMEOUT_MS,
        polling=300,
    )
    assert "MP3" in table.inner_text()
    assert page.evaluate(path_of) == reconstruction  # the same result: a new round trip writes a new folder
    page.context.close()


def test_anchors_ticked_after_the_ladder_keep_its_levels_and_a_quick_second_tick_arrives(chromium, server):  # noqa: F811
    """Two boxes ticked 0.3 s apart after the codebook ladder: both reach the player, and the
    ladder's levels stay in it. Before, the timeline made again dropped k1–k16 and the second box,
    ticked while the first was being added, never arrived although it showed ticked."""
    page = _open(chromium, server[0], viewport={"width": 1440, "height": 900})
    _round_trip(page)
    page.locator("#lab-ladder").get_by_text("Codebook ladder").first.click()
    page.locator("#lab-ladder-run").click()
    page.wait_for_function(f"{LAB}.sources.includes('k16') && {LAB}.sources.includes('k1')", timeout=TIMEOUT_MS)
    levels = [s for s in page.evaluate(LAB)["sources"] if s.startswith("k")]
    page.locator("#roundtrip-compare").get_by_text("Compare with known codecs").first.click()
    page.locator("#roundtrip-anchors").get_by_text("MP3 32 kbit/s").click()
    page.wait_for_timeout(300)
    page.locator("#roundtrip-anchors").get_by_text("LP 7 kHz").click()
    try:
        page.wait_for_function(
            f"{LAB}.sources.includes('mp3') && {LAB}.sources.includes('lp7')", timeout=TIMEOUT_MS, polling=200
        )
    except Exception as error:  # what the player and the boxes hold, for the failure's reader
        ticked = page.locator("#roundtrip-anchors input:checked").evaluate_all("els => els.map(e => e.value)")
        raise AssertionError(f"player: {page.evaluate(LAB)['sources']}; ticked: {ticked}") from error
    page.wait_for_timeout(1500)  # anything still on its way lands
    after = page.evaluate(LAB)["sources"]
    assert {"mp3", "lp7"} <= set(after)
    assert [s for s in after if s.startswith("k")] == levels, after
    shown = page.locator("#lab-player").inner_text()  # the player's source buttons a person sees
    assert "MP3 32" in shown and "Low-pass 7 kHz" in shown and "k = 16" in shown, shown
    page.context.close()
