"""A refused file never freezes the page, in Debian's chromium: a damaged MP3, a text file named
.wav and a 50 ms clip, each given and then *Encode → Decode* pressed: the box under the button says
why (in the viewport, not covered, in the page's language), the button comes back, and then a
good file round-trips without a reload. English on a desktop (1440 × 900), Chinese on a phone
(390 × 844, touch). Before, the box stayed at "Starting · 0 %" with the button disabled for good."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from tests.webui.test_demo_flow_browser import LAB, _open, chromium  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import CLIP, TIMEOUT_MS
from webui.i18n import text

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # three refusals and a round trip, twice

SEEN = """() => {
  const box = document.querySelector('#roundtrip-progress .cw-progress');
  const run = document.querySelector('#roundtrip-run');
  const r = box ? box.getBoundingClientRect() : null;
  const hit = r && document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return {state: box ? box.dataset.state : null, text: box ? box.innerText : '', disabled: run.disabled,
          inside: !!r && r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth,
          uncovered: !!hit && box.contains(hit),
          titles: [...document.querySelectorAll('.toast-title')].map((t) => t.innerText.trim())};
}"""


@pytest.fixture(scope="module")
def refused_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("refused")
    damaged = folder / "damaged.mp3"  # an ID3 tag, one MPEG frame header, then noise
    noise = np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes()
    damaged.write_bytes(b"ID3\x03\x00\x00\x00\x00\x00\x10" + b"\xff\xfb\x90\x64" + noise)
    renamed = folder / "notes.wav"
    renamed.write_text("this is not a RIFF file\n" * 20)
    short = folder / "short 50ms.wav"
    sf.write(short, 0.3 * np.sin(np.linspace(0, 80, 1200)), 24_000, subtype="PCM_16")
    return [damaged, renamed, short]


def _give(page, path) -> None:
    """Clear the input (its × button) when it holds a file, then give ``path``."""
    clear = page.locator("#roundtrip-input button.icon-button").last
    if not page.locator("#roundtrip-input input[type=file]").count():
        clear.click()
    page.locator("#roundtrip-input input[type=file]").set_input_files(str(path))
    page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=TIMEOUT_MS)


def _press(page, tap: bool) -> None:
    run = page.locator("#roundtrip-run")
    run.scroll_into_view_if_needed()
    run.tap() if tap else run.click()


@pytest.mark.parametrize(
    ("lang", "context"),
    [
        ("en", {"viewport": {"width": 1440, "height": 900}, "locale": "en-US"}),
        ("zh-CN", {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "locale": "zh-CN"}),
    ],
)
def test_refused_files_then_a_good_one_without_a_reload(chromium, server, refused_files, lang, context):  # noqa: F811
    page = _open(chromium, server[0], **context)
    tap = bool(context.get("has_touch"))
    for bad in refused_files:
        _give(page, bad)
        page.wait_for_function(  # said at once, under the button, before any press (this file's reason, not the last one's)
            """(name) => { const box = document.querySelector('#roundtrip-progress .cw-progress');
                           return !!box && box.dataset.state === 'refused' && box.innerText.includes(name); }""",
            arg=bad.name,
            timeout=TIMEOUT_MS,
            polling=200,
        )
        seen = page.evaluate(SEEN)
        assert seen["inside"] and seen["uncovered"] and bad.name in seen["text"], (bad.name, seen)
        assert not seen["disabled"], (bad.name, seen)
        _press(page, tap)  # pressed all the same
        page.locator(".toast-body.error").first.wait_for(timeout=TIMEOUT_MS)
        page.wait_for_function("!document.querySelector('#roundtrip-run').disabled", timeout=TIMEOUT_MS)
        page.wait_for_timeout(300)  # the toasts settle
        seen = page.evaluate(SEEN)
        assert not seen["disabled"], (bad.name, seen)
        assert seen["inside"] and seen["uncovered"], (bad.name, seen)
        assert seen["state"] == "refused" and bad.name in seen["text"], (bad.name, seen)
        assert text("running.refused", lang, message="").split(" ")[0][:3] in seen["text"], seen["text"]
        assert text("running.error_title", lang) in seen["titles"], seen["titles"]  # Gradio's own is "Error"
        for close in page.locator("[data-testid=toast-close]").all():
            close.click()
    _give(page, CLIP)
    page.wait_for_function("!document.querySelector('#roundtrip-progress .cw-progress')", timeout=TIMEOUT_MS)
    _press(page, tap)
    page.wait_for_function(
        "['starting', 'running', 'done'].includes((document.querySelector('#roundtrip-progress .cw-progress') || {dataset: {}}).dataset.state)",
        timeout=TIMEOUT_MS,
        polling=100,
    )  # the new job's box, not the last refusal (a 7 s clip may go from starting to done between two polls)
    page.locator("#roundtrip-verdict .cw-card").wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function(f"window.cwPlayer && {LAB}.duration > 7", timeout=TIMEOUT_MS)
    page.wait_for_function("!document.querySelector('#roundtrip-run').disabled", timeout=TIMEOUT_MS)
    assert page.evaluate(SEEN)["state"] == "done"
    assert page._cw_errors == []
    page.context.close()
