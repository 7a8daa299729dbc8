"""A 48 kHz decoder in Debian's chromium, in Chinese: a 44.1 kHz clip through the tiny 48 kHz recipe with the
tiny 24 kHz base loaded beside it as the second checkpoint. The player runs at 48 kHz, the flip from the
48 kHz reconstruction to the 24 kHz base switches at the same moment with only the chosen one heard, the
verdict card names both decoders' rates (in view, not covered), at 1440×900 and on a 390×844 phone.
Screenshots go to $CW_SHOTS (default: the test's temporary folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.webui.test_family_page import clip_44k
from tests.webui.test_lab_browser import FLIP_TOLERANCE_S, STATE, _audible, _flip
from tests.webui.test_webui_browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS

pytestmark = pytest.mark.browser

VIEWS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def served(tiny_checkpoint_48k, tiny_checkpoint, tmp_path_factory):
    from core.model import second
    from core.model.engine import Engine
    from core.settings import Settings
    from tests.ports import reserve_port
    from webui.app import build_app
    from webui.options import UiOptions
    from webui.server import ServerOptions, launch

    engine = Engine(Settings(model=str(tiny_checkpoint_48k), device="cpu", mos_windows=1, anchors="none"))
    assert engine.load(), engine.error
    assert second.load_second(engine, str(tiny_checkpoint)).ready
    ui = UiOptions(temp_root=tmp_path_factory.mktemp("family-browser"))
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    clip = clip_44k(tmp_path_factory.mktemp("family-clip") / "voice 44k.wav", 5.0)
    yield url, clip
    demo.close()


@pytest.fixture(scope="module", params=list(VIEWS))
def page(request, served, tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    url, clip = served
    phone = request.param == "phone"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, "--autoplay-policy=no-user-gesture-required"]
        )
        context = browser.new_context(
            viewport=VIEWS[request.param], locale="zh-CN", has_touch=phone, is_mobile=phone, device_scale_factor=1
        )
        page = context.new_page()
        page.goto(url)
        page.locator("#roundtrip-input input[type=file]").set_input_files(str(clip))
        page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
        page.locator("#roundtrip-run").click()
        page.wait_for_function(
            f"window.cwPlayer && ['compare', 'residual'].every((s) => {STATE}.sources.includes(s))",
            timeout=TIMEOUT_MS,
        )
        page.shots = Path(os.environ.get("CW_SHOTS") or tmp_path_factory.mktemp("shots"))  # type: ignore[attr-defined]
        page.view = request.param  # type: ignore[attr-defined]
        yield page
        browser.close()


def _in_view_and_uncovered(page, selector: str) -> str:
    """The element's text when it is inside the viewport, not clipped, and on top at its centre."""
    return page.evaluate(
        """(sel) => {
        const el = document.querySelector(sel);
        if (!el) return 'missing';
        el.scrollIntoView({block: 'center'});
        const r = el.getBoundingClientRect();
        if (r.width <= 0 || r.height <= 0) return 'empty';
        if (r.left < 0 || r.right > innerWidth + 1 || r.top < 0 || r.bottom > innerHeight + 1) return 'outside';
        const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return top && (top === el || el.contains(top)) ? el.innerText : 'covered';
    }""",
        selector,
    )


def test_the_player_runs_at_48k_and_the_flip_to_the_24k_base_is_at_the_same_moment(page):
    assert page.evaluate("window.cwPlayer.manifest.sample_rate") == 48_000
    page.locator("#lab-player .cw-play").click()
    _audible(page, "reconstruction")  # the 48 kHz reconstruction first (a new result plays the codec)
    assert page.evaluate("window.cwPlayer.ctx.sampleRate") == 48_000
    page.wait_for_function(f"{STATE}.time > 0.5", timeout=10_000)
    page.evaluate("window.cwPlayer.seek(0.2)")  # room for three flips before the end, on a busy machine
    _audible(page, "reconstruction")
    for key, source in (("c", "compare"), ("b", "reconstruction"), ("c", "compare")):
        before, after = _flip(page, key)
        assert after["source"] == source and len(after["voices"]) >= 2, after
        *_, old, new = after["voices"]
        assert (new["id"], new["stopped"], old["stopped"]) == (source, False, True)
        assert new["from"] == pytest.approx(old["from"] + new["when"] - old["when"], abs=1e-6)  # same instant
        assert 0.0 <= new["from"] - before <= FLIP_TOLERANCE_S
        _audible(page, source)
        page.wait_for_timeout(200)
    page.evaluate("window.cwPlayer.pause()")


def test_the_card_names_both_rates_in_view_and_the_spectrogram_shows(page):
    from playwright.sync_api import expect

    card = page.locator(".cw-card-final")
    expect(card).to_be_visible(timeout=TIMEOUT_MS)
    rates = page.locator(".cw-card-final .cw-card-rates")
    expect(rates.first).to_contain_text("48 kHz")
    said = [_in_view_and_uncovered(page, f".cw-card-final .cw-card-rates:nth-of-type({i})") for i in (1, 2, 3)]
    assert "本检查点的解码器输出 48 kHz" in said[0], said
    assert "第二个检查点的解码器输出 24 kHz" in said[1], said
    assert "48 kHz" in said[2] and "22.05 kHz" in said[2], said
    page.locator(".cw-card-final").scroll_into_view_if_needed()
    page.screenshot(path=str(page.shots / f"family-card-{page.view}.png"))
    spectrogram = page.locator("#roundtrip-spectrogram img")
    if spectrogram.count():
        spectrogram.first.scroll_into_view_if_needed()
        box = spectrogram.first.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100
        page.screenshot(path=str(page.shots / f"family-spectrogram-{page.view}.png"))
    page.locator("#lab-player").scroll_into_view_if_needed()
    page.screenshot(path=str(page.shots / f"family-player-{page.view}.png"))
