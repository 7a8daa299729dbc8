"""The Fine-tune tab in Debian's chromium, as a person sees it, with the real trainer on the tiny
checkpoint (CPU): in a zh-CN browser at 1440 × 900, by keyboard only, the steps typed and *Start*
pressed; the progress line changes while it runs, the loss curve lies in the viewport (not clipped,
not covered), the random-weights warning beside the figures; at the end *Compare with the base in the
lab* opens the Round trip with the fine-tuned checkpoint beside its base (the player flips to it, the
table has its column under its Chinese name and its run, the codes agree). On a 390 × 844 touch phone
*Stop* keeps the checkpoint of the last step. Saves docs/finetune.png (1440 × 900, English)."""

from __future__ import annotations

import re
import time

import pytest

from core.model import second
from tests.ports import reserve_port
from tests.webui.test_finetune_page import make_data
from tests.webui.test_parity_browser import SEEN, browser  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import REPO, TIMEOUT_MS, _save_small
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOT = REPO / "docs" / "finetune.png"
RUN_MS = 420_000  # a run's process on 2 busy CPU cores: import, prepare, train, export
LAB = "window.cwPlayer.state()"


@pytest.fixture(scope="module")
def site(engine, tmp_path_factory):
    base = tmp_path_factory.mktemp("finetune-browser")
    ui = UiOptions(
        temp_root=base / "work", finetune_data_root=make_data(base / "data"), finetune_runs_dir=base / "runs"
    )
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    yield url
    demo.close()
    second.unload_second(engine)


def _page(browser, url, locale, viewport, touch=False):  # noqa: F811
    context = browser.new_context(
        viewport={"width": viewport[0], "height": viewport[1]}, locale=locale, has_touch=touch, is_mobile=touch
    )
    page = context.new_page()
    page.goto(url)
    page.locator("#roundtrip-run").wait_for(state="visible", timeout=TIMEOUT_MS)
    return page


def _keys_to(page, predicate: str, limit: int = 40) -> int:
    """Press Tab until ``predicate`` (JS, on document.activeElement) holds; how many presses it took."""
    for presses in range(limit):
        if page.evaluate(f"(() => {{ const a = document.activeElement; return !!({predicate}); }})()"):
            return presses
        page.keyboard.press("Tab")
    raise AssertionError(f"{predicate} not reached in {limit} Tabs")


def _seen(page, selector: str) -> str:
    return page.locator(selector).evaluate(SEEN)


def _step_of(page) -> int:
    found = re.search(r"(\d+)", page.locator("#finetune-status .cw-progress-line b").inner_text())
    return int(found.group(1)) if found else -1


def test_keyboard_start_in_chinese_the_curve_grows_then_compare_in_the_lab(browser, site):  # noqa: F811
    from playwright.sync_api import expect

    page = _page(browser, site, "zh-CN", (1440, 900))
    _keys_to(page, "a.getAttribute('role') === 'tab'")  # the tab list: one tab stop, then the arrow keys
    for _ in range(12):
        if page.evaluate("document.activeElement.textContent.trim()") == "微调":
            break
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")  # the arrow keys move the focus; Enter opens the tab
    expect(page.get_by_role("tab", name="微调")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#finetune-plan")).to_contain_text("计划", timeout=TIMEOUT_MS)  # the plan before a run
    _keys_to(page, "a.closest('#finetune-steps')")
    page.keyboard.press("Control+A")
    page.keyboard.type("16")
    _keys_to(page, "a.id === 'finetune-start'")
    page.keyboard.press("Enter")

    status = page.locator("#finetune-status")
    expect(status.locator("[data-state=running]")).to_be_visible(timeout=RUN_MS)
    page.wait_for_function(
        "document.querySelector('#finetune-status .cw-progress-line b')?.textContent.match(/第 [1-9]/)",
        timeout=RUN_MS,
    )
    first_step = _step_of(page)
    page.wait_for_function(  # the line moves on while it runs
        f"(document.querySelector('#finetune-status .cw-progress-line b')?.textContent.match(/第 (\\d+) 步/) || [0, 0])[1] > {first_step}"
        " || !!document.querySelector('#finetune-status [data-state=done]')",
        timeout=RUN_MS,
    )
    curve = page.locator("#finetune-curve-svg")
    expect(curve).to_be_visible()
    assert _seen(page, "#finetune-curve-svg") == "seen"
    assert _seen(page, "#finetune-status .cw-ft-random") == "seen"  # the figures come with the warning
    expect(status).to_contain_text("随机权重")

    expect(status.locator("[data-state=done]")).to_be_visible(timeout=RUN_MS)
    expect(status).to_contain_text("完成：16 步")
    points = int(curve.get_attribute("data-points"))
    assert points >= 8 and int(curve.get_attribute("data-val-points")) >= 2
    compare = page.locator("#finetune-compare")
    expect(compare).to_be_visible()
    assert _seen(page, "#finetune-compare") == "seen"
    compare.focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("tab", name="往返")).to_have_attribute("aria-selected", "true", timeout=TIMEOUT_MS)
    page.wait_for_function(f"window.cwPlayer && {LAB}.sources.includes('compare')", timeout=RUN_MS)
    button = page.locator("#lab-player button[data-source=compare]")
    expect(button).to_contain_text("第二个检查点")
    run = re.search(r"run-[\w-]+", button.inner_text())
    assert run, button.inner_text()  # named by its run
    page.locator("#roundtrip-details .label-wrap").first.click()
    table = page.locator("#lab-compare-table")
    expect(table).to_contain_text("第二个检查点", timeout=RUN_MS)
    expect(table).to_contain_text(run.group(0))
    assert table.inner_text().count("第二个检查点") == 1  # one column, its name said once
    expect(page.locator("#lab-agreement")).to_contain_text("100%", timeout=TIMEOUT_MS)  # the base's codes
    page.context.close()


def test_the_finished_run_as_the_docs_show_it(browser, site, tmp_path):  # noqa: F811
    from playwright.sync_api import expect

    page = _page(browser, site, "en-US", (1440, 900))
    page.get_by_role("tab", name="Fine-tune").click()
    expect(page.locator("#finetune-status [data-state=done]")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#finetune-compare")).to_be_visible()
    expect(page.locator("#finetune-plan")).to_contain_text("The plan", timeout=TIMEOUT_MS)
    page.locator("#finetune-original audio, #finetune-original [data-testid=waveform-controls]").first.wait_for(
        state="attached", timeout=TIMEOUT_MS
    )  # a held-out clip to hear, as the trainer decoded it
    page.wait_for_timeout(500)
    shot = tmp_path / "finetune.png"
    page.screenshot(path=str(shot), full_page=True)
    _save_small(shot, SCREENSHOT)
    page.context.close()


def test_phone_touch_stop_keeps_the_last_steps_checkpoint(browser, site):  # noqa: F811
    from playwright.sync_api import expect

    page = _page(browser, site, "zh-CN", (390, 844), touch=True)
    tab = page.get_by_role("tab", name="微调")
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while tab.get_attribute("aria-selected") != "true" and time.monotonic() < deadline:
        tab.tap()
        page.wait_for_timeout(300)
    page.locator("#finetune-steps input").fill("4000")
    page.locator("#finetune-start").tap()
    page.wait_for_function(
        "(document.querySelector('#finetune-status .cw-progress-line b')?.textContent.match(/第 (\\d+) 步/) || [0, 0])[1] >= 2",
        timeout=RUN_MS,
    )
    assert _seen(page, "#finetune-curve-svg") == "seen"  # on the phone too, in view and uncovered
    assert _seen(page, "#finetune-stop") == "seen"
    page.locator("#finetune-stop").tap()
    status = page.locator("#finetune-status")
    expect(status.locator("[data-state=stopped]")).to_be_visible(timeout=RUN_MS)
    expect(status).to_contain_text("保留了该步的检查点和导出的模型")
    expect(page.locator("#finetune-start")).to_be_enabled()  # the page stays usable
    expect(page.locator("#finetune-compare")).to_be_visible()
    page.context.close()
