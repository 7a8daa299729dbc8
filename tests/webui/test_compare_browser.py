"""The comparison in Debian's chromium: the round trip makes the default anchors with the real
encoders and, with a second tiny checkpoint (other random weights) loaded beside the first, its
reconstruction; the player flips codec -> Opus 6 -> phone call -> second checkpoint at the same
position with the chosen one the only source heard; R is the residual against the last source
chosen; the table of every source fills in with both checkpoints. Saves the README's screenshot
docs/compare.png (the player with the anchors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webui.test_lab_browser import FLIP_TOLERANCE_S, STATE, _audible, _flip
from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS, CLIP, REPO, TIMEOUT_MS, _save_small

pytestmark = pytest.mark.browser

SCREENSHOT = REPO / "docs" / "compare.png"


@pytest.fixture(scope="module")
def page(server, engine, second_checkpoint):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from core.model import second

    assert second.load_second(engine, str(second_checkpoint)).ready  # the live server's engine, for this module
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, "--autoplay-policy=no-user-gesture-required"]
        )
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(server[0])
        page.locator("#roundtrip-input input[type=file]").set_input_files(str(CLIP))
        page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
        page.locator("#roundtrip-run").click()
        page.wait_for_function(
            f"window.cwPlayer && ['opus6', 'amr', 'compare', 'residual'].every((s) => {STATE}.sources.includes(s))",
            timeout=TIMEOUT_MS,
        )
        yield page
        browser.close()
    second.unload_second(engine)


def test_the_anchors_are_sources_with_their_bitrate_and_key_on_the_button(page):
    state = page.evaluate(STATE)
    assert state["sources"][:3] == ["original", "reconstruction", "residual"]
    assert {"lp3.5", "amr", "opus6"} <= set(state["sources"])  # the server's default --anchors
    opus = page.locator("#lab-player button[data-source=opus6]")
    assert "Opus 6 kbit/s" in opus.inner_text() and opus.locator("kbd").inner_text() == "O"
    phone = page.locator("#lab-player button[data-source=amr]")
    assert "AMR-NB 12.2 kbit/s" in phone.inner_text() and phone.locator("kbd").inner_text() == "P"


def test_flip_codec_opus6_amr_at_the_same_position(page):
    page.locator("#lab-player .cw-play").click()
    _audible(page, "reconstruction")  # a new result plays the codec first
    page.wait_for_function(f"{STATE}.time > 0.5", timeout=10_000)
    for key, source in (("o", "opus6"), ("p", "amr"), ("c", "compare"), ("b", "reconstruction")):
        before, after = _flip(page, key)
        assert after["source"] == source
        *_, old, new = after["voices"]
        assert (new["id"], new["stopped"], old["stopped"]) == (source, False, True)
        assert new["from"] == pytest.approx(old["from"] + new["when"] - old["when"], abs=1e-6)  # same instant
        assert 0.0 <= new["from"] - before <= FLIP_TOLERANCE_S  # where the transport was at the key press
        _audible(page, source)  # and it is the only one heard
        page.wait_for_timeout(250)


def test_r_is_the_residual_against_the_last_source_chosen(page):
    page.keyboard.press("o")
    _audible(page, "opus6")
    page.keyboard.press("r")
    _audible(page, "residual")
    state = page.evaluate(STATE)
    assert state["residualOf"] == "opus6"
    assert "Opus 6 kbit/s" in page.locator("#lab-player button[data-source=residual]").inner_text()
    page.keyboard.press("b")  # back to the codec: R follows it
    _audible(page, "reconstruction")
    assert page.evaluate(STATE)["residualOf"] == "reconstruction"


def test_the_table_of_every_source_fills_in_and_the_player_is_pictured(page):
    from playwright.sync_api import expect

    page.locator("#roundtrip-details").get_by_text("Details", exact=False).first.click()
    table = page.locator("#lab-compare-table")
    expect(table).to_contain_text("Opus 6 kbit/s", timeout=TIMEOUT_MS)
    expect(table).to_contain_text("PESQ-WB")
    expect(table).to_contain_text("Second checkpoint")  # both checkpoints' columns
    expect(page.locator("#lab-placing")).to_contain_text("Where the codec stands", timeout=TIMEOUT_MS)
    expect(page.locator("#lab-agreement")).to_contain_text("Codes of the two checkpoints")
    page.evaluate("window.cwPlayer.pause()")
    page.keyboard.press("o")
    page.wait_for_timeout(300)
    player = page.locator("#lab-player")
    player.scroll_into_view_if_needed()
    shot = SCREENSHOT.with_suffix(".tmp.png")
    player.screenshot(path=str(shot))
    _save_small(shot, SCREENSHOT)
    shot.unlink()
