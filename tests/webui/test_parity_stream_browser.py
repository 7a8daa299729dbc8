"""The Check a port tab's stream check in Debian's chromium, as a person sees it: a TTS server's stream
with a 40 ms gap shows "failed" with the gap, in view (not clipped, not covered), in English at
1440 × 900 and in Chinese on a phone (390 × 844, touch) without sideways scrolling; the workbench's own
stream shows "ok"."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from core.codec import SAMPLE_RATE
from tests.webui.test_parity_browser import SEEN, browser, open_tab  # noqa: F401 - browser is a fixture
from tests.webui.test_webui_browser import TIMEOUT_MS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def stream_files(engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("stream-port")
    codes = np.random.default_rng(12).integers(0, 2048, size=(40, 16))
    np.save(folder / "stream_codes.npy", codes)
    with engine.stream_decoder() as decoder:
        ours = np.concatenate([decoder.push(codes[low : low + 4]) for low in range(0, 40, 4)])
    sf.write(folder / "stream_ours.wav", ours, SAMPLE_RATE, subtype="PCM_16")
    gap = np.concatenate([ours[:30_000], np.zeros(960, np.float32), ours[30_000:]])
    sf.write(folder / "stream_gap.wav", gap, SAMPLE_RATE, subtype="FLOAT")
    return folder


def run_check(page, files, wav: str, tap: bool = False):
    from playwright.sync_api import expect

    page.locator("#parity-stream-codes input[type=file]").set_input_files(str(files / "stream_codes.npy"))
    page.locator("#parity-stream-wav input[type=file]").set_input_files(str(files / wav))
    expect(page.locator("#parity-stream-codes")).to_contain_text("stream_codes", timeout=TIMEOUT_MS)
    expect(page.locator("#parity-stream-wav")).to_contain_text(wav.removesuffix(".wav"), timeout=TIMEOUT_MS)
    button = page.locator("#parity-run-stream")
    button.tap() if tap else button.click()
    return page.locator("#parity-stream-verdict")


def test_a_gap_fails_and_our_stream_is_ok(browser, server, stream_files):  # noqa: F811
    from playwright.sync_api import expect

    context, page = open_tab(browser, server, "Check a port")
    result = run_check(page, stream_files, "stream_gap.wav")
    expect(result).to_contain_text("failed: 1 gap(s) of inserted silence (40 ms in all", timeout=TIMEOUT_MS)
    expect(page.locator("#parity-stream-measures")).to_contain_text("1.250")  # the gaps table: where it starts
    assert result.evaluate(SEEN) == "seen"
    context.close()
    context, page = open_tab(browser, server, "Check a port")
    result = run_check(page, stream_files, "stream_ours.wav")
    expect(result).to_contain_text("ok: The stream equals the whole decode", timeout=TIMEOUT_MS)
    assert result.evaluate(SEEN) == "seen"
    context.close()


def test_in_chinese_on_a_phone(browser, server, stream_files):  # noqa: F811
    from playwright.sync_api import expect

    context, page = open_tab(browser, server, "检查移植版本", locale="zh-CN", viewport=(390, 844), touch=True)
    result = run_check(page, stream_files, "stream_gap.wav", tap=True)
    expect(result).to_contain_text("未通过", timeout=TIMEOUT_MS)
    expect(result).to_contain_text("插入的静音空隙")
    expect(page.locator("#parity-stream-measures")).to_contain_text("长度漂移")
    assert result.evaluate(SEEN) == "seen"
    width = result.evaluate(
        "(el) => [el.scrollWidth, el.clientWidth, document.documentElement.scrollWidth, innerWidth]"
    )
    assert width[2] <= width[3] + 1, width  # the page does not scroll sideways
    context.close()
