"""The page in Debian's chromium through Playwright (never a downloaded browser): status
bar, a round trip's details, decoding a token file, Clear VRAM. The browser helpers the other
browser tests import are here (the demo flow and its screenshots: test_demo_flow_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import docs_output

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parents[2]
CLIP = REPO / "webui" / "assets" / "speech_male_24k.wav"
TIMEOUT_MS = 90_000  # a round trip on 2 busy CPU cores


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(server[0])
    yield page
    context.close()


def test_status_bar_shows_the_three_steps(page):
    from playwright.sync_api import expect

    status = page.locator("#status-bar")
    for title in ("CUDA present", "Weights resident", "Test round trip"):
        expect(status).to_contain_text(title, timeout=TIMEOUT_MS)
    expect(status).to_contain_text("Ready")
    expect(page.locator("#rerun-checks")).to_be_visible()
    for width, height in ((1280, 900), (390, 844)):  # the button lies inside the bar's box, on its line
        page.set_viewport_size({"width": width, "height": height})
        page.locator("#status-bar details").evaluate("e => e.open = false")
        page.wait_for_timeout(100)
        button = page.locator("#rerun-checks").bounding_box()
        bar = page.locator("#status-bar .cw-status").bounding_box()
        line = page.locator("#status-bar .cw-status > summary").bounding_box()
        assert bar["y"] < button["y"] and button["y"] + button["height"] < bar["y"] + bar["height"], (button, bar)
        assert button["x"] + button["width"] < bar["x"] + bar["width"], (button, bar)
        assert line["y"] <= button["y"] + button["height"] / 2 <= line["y"] + line["height"], (button, line)


def test_roundtrip_from_an_uploaded_file(page):
    """The round trip's details (folded under the verdict and the player; the flow itself:
    tests/webui/test_demo_flow_browser.py)."""
    from playwright.sync_api import expect

    page.locator("#roundtrip-input input[type=file]").set_input_files(str(CLIP))
    expect(page.locator("#roundtrip-input [data-testid=download-link]")).to_be_attached(timeout=TIMEOUT_MS)
    page.locator("#roundtrip-run").click()
    page.wait_for_function("window.cwPlayer && window.cwPlayer.state().duration > 7", timeout=TIMEOUT_MS)
    assert page.evaluate("window.cwPlayer.state().duration") == pytest.approx(7.16, abs=0.01)
    page.locator("#roundtrip-details .label-wrap").first.click()  # the details, folded until asked for
    expect(page.locator("#roundtrip-metrics")).to_contain_text("PESQ-WB", timeout=TIMEOUT_MS)
    expect(page.locator("#roundtrip-metrics")).to_contain_text("STOI")
    expect(page.locator("#roundtrip-spectrogram img")).to_be_visible()
    expect(page.locator("#roundtrip-tokens")).to_contain_text("90 × 16")
    expect(page.locator("#roundtrip-downloads")).to_contain_text("speech_male_24k_tokens")


def _save_small(source: Path, target: Path) -> None:
    """The docs' screenshot, written only under ``make screenshots`` (``tests/docs_output.py``)."""
    docs_output.save_picture(source, target)


def test_decode_a_token_file(page, tabs, clip):
    from playwright.sync_api import expect

    token_path = tabs.encode.encode(str(clip))[0]
    page.get_by_role("tab", name="Decode").click()
    page.locator("#decode-input input[type=file]").set_input_files(token_path)
    expect(page.locator("#decode-input")).to_contain_text(".npz", timeout=TIMEOUT_MS)
    page.locator("#decode-run").click()
    expect(page.locator("#decode-audio time#duration")).to_have_text("0:03", timeout=TIMEOUT_MS)
    expect(page.locator("#decode-summary")).to_contain_text("Made by model")
    expect(page.locator("#decode-spectrogram img")).to_be_visible()


def test_bad_token_file_shows_an_error(page, bad_tokens):
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Decode").click()
    page.locator("#decode-input input[type=file]").set_input_files(str(bad_tokens))
    expect(page.locator("#decode-input")).to_contain_text("wrong.npz", timeout=TIMEOUT_MS)
    page.locator("#decode-run").click()
    toast = page.get_by_test_id("toast-body").first
    expect(toast).to_be_visible(timeout=TIMEOUT_MS)
    expect(toast).to_contain_text("not a token file")


def test_system_stats_and_clear_vram(page):
    from playwright.sync_api import expect

    page.get_by_role("tab", name="System").click()
    expect(page.locator("#system-stats")).to_contain_text("Process RAM", timeout=TIMEOUT_MS)
    # the test engine runs on the CPU: nothing to clear, so no button offers it (issue 29); /clear_vram still answers
    expect(page.locator("#clear-vram")).to_be_hidden()
