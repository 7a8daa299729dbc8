"""The Fine-tune tab for a visitor, in Debian's chromium: the app listens on every interface and a
browser opens it at this machine's own address (not loopback), as a colleague's laptop would. The
visitor sees the note that training is the operator's, in the viewport and not covered, and no
controls (no data list, no *Start*); `/finetune_start` through gradio_client from that address is
refused in words and writes nothing. The operator's browser at 127.0.0.1 sees *Start*."""

from __future__ import annotations

import pytest

from tests.ports import reserve_port
from tests.webui.test_finetune_page import make_data
from tests.webui.test_parity_browser import browser  # noqa: F401 - the module's browser
from tests.webui.test_share_link_browser import SEEN
from tests.webui.test_webui_browser import TIMEOUT_MS
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch
from webui.serving import share_link

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def site(engine, tmp_path_factory):
    address = share_link.machine_address()
    if address is None:
        pytest.skip("this machine has no address beyond loopback to open the page at")
    base = tmp_path_factory.mktemp("finetune-visitor")
    runs = base / "runs"
    ui = UiOptions(temp_root=base / "work", finetune_data_root=make_data(base / "data"), finetune_runs_dir=runs)
    demo = build_app(engine, ui)
    port = reserve_port()
    launch(demo, engine, ui, ServerOptions(host="0.0.0.0", port=port))
    yield f"http://{address}:{port}", f"http://127.0.0.1:{port}", runs
    demo.close()


def _open_tab(browser, url, locale="en"):  # noqa: F811
    page = browser.new_context(viewport={"width": 1440, "height": 900}, locale=locale).new_page()
    page.goto(url)
    page.locator("#roundtrip-run").wait_for(state="visible", timeout=TIMEOUT_MS)
    page.get_by_role("tab", name="Fine-tune" if locale == "en" else "微调").click()
    return page


def test_a_visitor_sees_the_note_and_no_start(browser, site):  # noqa: F811
    from playwright.sync_api import expect

    visitor_url, operator_url, runs = site
    page = _open_tab(browser, visitor_url)
    note = page.locator("#finetune-visitors")
    expect(note).to_be_visible(timeout=TIMEOUT_MS)
    seen = page.evaluate(SEEN, "#finetune-visitors")
    assert "only a browser on the server's own machine" in seen["text"], seen
    assert seen["inside"] and seen["uncovered"], seen
    assert not page.locator("#finetune-start").is_visible()
    assert not page.locator("#finetune-data").is_visible()
    page.context.close()

    from gradio_client import Client

    client = Client(visitor_url + "/", verbose=False)
    with pytest.raises(Exception, match="Only the operator"):
        client.predict("voices/anna", 16, "auto", False, api_name="/finetune_start")
    assert not runs.exists() or not any(runs.iterdir())  # nothing was written

    operator = _open_tab(browser, operator_url)
    expect(operator.locator("#finetune-start")).to_be_visible(timeout=TIMEOUT_MS)
    assert not operator.locator("#finetune-visitors").is_visible()
    operator.context.close()
