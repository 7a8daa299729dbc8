"""Issue 29, item 6, in Debian's chromium, by keyboard only: after choosing an example clip,
*Encode → Decode* is at most two Tabs away (it was 22), and its focus ring is visible (an outline
of at least 2 px in a colour far from the page's background; it was a white ring on indigo)."""

from __future__ import annotations

import pytest

from tests.webui.test_demo_flow_browser import _open, chromium  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import TIMEOUT_MS
from webui.i18n import text

pytestmark = pytest.mark.browser

RING = """() => {
  const b = document.activeElement, s = getComputedStyle(b);
  const rgb = (c) => (c.match(/[\\d.]+/g) || [0, 0, 0]).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, bl] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                       return 0.2126 * r + 0.7152 * g + 0.0722 * bl; };
  const page = getComputedStyle(document.querySelector('.gradio-container') || document.body).backgroundColor;
  const [a, c] = [lum(s.outlineColor), lum(page === 'rgba(0, 0, 0, 0)' ? 'rgb(255,255,255)' : page)];
  return {id: b.id, width: parseFloat(s.outlineWidth), style: s.outlineStyle,
          contrast: (Math.max(a, c) + 0.05) / (Math.min(a, c) + 0.05)};
}"""


def test_encode_decode_is_near_after_an_example_and_its_focus_ring_shows(chromium, server):  # noqa: F811
    page = _open(chromium, server[0], viewport={"width": 1440, "height": 900})
    example = page.get_by_role("button", name=text("input.example.speech_male_24k", "en"))  # words, not a file name
    example.focus()
    page.keyboard.press("Enter")
    page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)
    tabs = 0
    while page.evaluate("document.activeElement.id") != "roundtrip-run" and tabs < 30:
        page.keyboard.press("Tab")
        tabs += 1
    assert tabs <= 2, f"{tabs} Tabs from the example to Encode → Decode"
    ring = page.evaluate(RING)
    assert ring["id"] == "roundtrip-run" and ring["style"] != "none" and ring["width"] >= 2, ring
    assert ring["contrast"] >= 3, ring  # WCAG 2.1 non-text contrast against the page around it
    page.context.close()


def test_the_example_clips_are_said_in_words_in_the_pages_language(chromium, server):  # noqa: F811
    """A first-time visitor reads what each example is ("A man's voice · 7 s"), not a file name such as
    speech_female_16k_stereo.wav, in English and in Chinese."""
    for lang in ("en", "zh-CN"):
        page = _open(chromium, server[0], viewport={"width": 1440, "height": 900}, locale=lang)
        page.get_by_role("button", name=text("input.example.speech_male_24k", lang)).wait_for(timeout=TIMEOUT_MS)
        words = page.locator("button:visible").all_inner_texts()
        assert not any(".wav" in w for w in words), words
        for stem in ("speech_male_24k", "speech_female_16k_stereo", "recorded_front_center_48k"):
            button = page.get_by_role("button", name=text(f"input.example.{stem}", lang))
            assert button.is_visible(), (lang, stem)
        page.context.close()
