"""The page in a browser whose language is Simplified Chinese (Debian's chromium through
Playwright): labels translated in the browser, the status bar and errors made on the server.
Saves the Chinese page to docs/i18n-zh.png and the Diagnose panel to docs/doctor-zh.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_webui_browser import TIMEOUT_MS, _save_small, browser  # noqa: F401 (browser: the fixture)

pytestmark = pytest.mark.browser

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "i18n-zh.png"
DOCTOR_SCREENSHOT = SCREENSHOT.with_name("doctor-zh.png")


@pytest.fixture
def zh_page(browser, server):  # noqa: F811 (the imported fixture)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="zh-CN")
    page = context.new_page()
    page.goto(server[0])
    yield page
    context.close()


def test_the_page_speaks_chinese(zh_page, tmp_path):
    from playwright.sync_api import expect

    status = zh_page.locator("#status-bar")
    for words in ("就绪", "CUDA 可用", "权重已驻留", "测试往返", "常驻权重"):
        expect(status).to_contain_text(words, timeout=TIMEOUT_MS)
    expect(zh_page.get_by_role("tab", name="往返")).to_be_visible()
    expect(zh_page.locator("#roundtrip-run")).to_have_text("编码 → 解码")
    expect(zh_page.locator("#rerun-checks")).to_have_text("重新检查")
    shot = tmp_path / "zh.png"
    zh_page.screenshot(path=str(shot))
    _save_small(shot, SCREENSHOT)

    zh_page.locator("#roundtrip-run").click()  # no audio yet: the error comes back in Chinese
    toast = zh_page.get_by_test_id("toast-body").first
    expect(toast).to_be_visible(timeout=TIMEOUT_MS)
    expect(toast).to_contain_text("还没有音频：请先上传或录制音频。")


def test_diagnose_on_the_system_tab(zh_page, tmp_path):
    from playwright.sync_api import expect

    zh_page.get_by_role("tab", name="系统").click()
    zh_page.locator("#doctor-run").click()
    panel = zh_page.locator("#doctor-panel")
    expect(panel).to_contain_text("8 / 16 / 44.1 / 48 kHz 测试音往返", timeout=TIMEOUT_MS)
    expect(panel).to_contain_text("端口空闲或由本程序占用")
    expect(panel.locator('[data-check="tones"] .cw-word')).to_have_text("通过")
    expect(panel.locator('[data-check="port"]')).to_contain_text("Codec Workbench")  # the server found itself
    shot = tmp_path / "doctor.png"
    panel.screenshot(path=str(shot))
    _save_small(shot, DOCTOR_SCREENSHOT)
