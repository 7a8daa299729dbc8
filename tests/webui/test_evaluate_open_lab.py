"""Issue 29, item 8: no row of the Evaluate tab opened in the lab. Each evaluated file now opens as a
round trip (the lab's flip player, verdict, blind test); a path the session did not evaluate is refused."""

from __future__ import annotations

import gradio as gr
import pytest

from tests.webui.test_demo_flow_browser import LAB, _open, chromium  # noqa: F401 - the module's browser
from tests.webui.test_webui_browser import CLIP, TIMEOUT_MS
from webui.serving.workspace import Workspace
from webui.tabs.evaluate import EvaluateHandlers


def test_only_this_sessions_evaluated_files_open(engine, tmp_path, clip):
    handlers = EvaluateHandlers(engine, Workspace(tmp_path / "work"))
    path, tabs = handlers.open_in_lab(str(clip), [str(clip), ""])
    assert path == str(clip) and tabs.selected == "roundtrip"
    with pytest.raises(gr.Error):
        handlers.open_in_lab("/etc/passwd", [str(clip)])
    with pytest.raises(gr.Error):
        handlers.open_in_lab("", [""])


@pytest.mark.browser
def test_an_evaluate_row_opens_in_the_lab(chromium, server):  # noqa: F811
    page = _open(chromium, server[0], viewport={"width": 1440, "height": 900})
    page.get_by_role("tab", name="Evaluate files").click()
    page.locator("#evaluate-input input[type=file]").set_input_files(str(CLIP))
    page.locator("#evaluate-run").click()
    button = page.locator("#evaluate-open-lab")
    button.wait_for(state="visible", timeout=TIMEOUT_MS * 2)
    button.click()
    page.locator("#roundtrip-result").wait_for(state="visible", timeout=TIMEOUT_MS * 2)
    page.wait_for_function(f"window.cwPlayer && {LAB}.sources.includes('reconstruction')", timeout=TIMEOUT_MS * 2)
    box = page.locator("#lab-player").bounding_box()
    assert box and box["height"] > 0
    assert page.get_by_role("tab", name="Round trip").get_attribute("aria-selected") == "true"
    assert not page._cw_errors, page._cw_errors
    page.context.close()
