"""A script shares a test and reads its result through the named API endpoints, as the page's
*Share with listeners* does (``/share_create``, ``/share_results``; docs/api.md): the link it gets
opens the listener page, the result names the plan and its state, and a wrong owner key is refused
in words."""

from __future__ import annotations

import urllib.request

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from tests.webui.shared_test_server import shared_test_server
from tests.webui.test_webui_browser import CLIP


@pytest.fixture(scope="module")
def app(tiny_checkpoint, tmp_path_factory):
    with shared_test_server(tiny_checkpoint, tmp_path_factory, "share-api") as (url, _engine, _ui):
        yield url, Client(url, verbose=False)


def test_a_script_creates_a_test_and_reads_its_result(app):
    url, client = app
    made = client.predict(
        handle_file(str(CLIP)), 1.0, 3.0, "mushra", ["reconstruction", "opus6"], 10, 3600, api_name="/share_create"
    )
    assert made["kind"] == "mushra" and made["url"].endswith("/listen/" + made["link"]) and made["owner"]
    assert made["expires"] - made["created"] == pytest.approx(3600, abs=1)
    with urllib.request.urlopen(made["url"], timeout=30) as page:  # the listener page opens
        assert page.status == 200
    pooled, every = client.predict(made["link"], made["owner"], False, api_name="/share_results")
    assert pooled["kind"] == "mushra" and pooled["state"] == "open" and pooled["listeners"] == []
    assert set(pooled["plan"]["conditions"]) >= {"reconstruction", "opus6"}
    assert every is None  # no answers yet: no CSV
    with pytest.raises(AppError, match="owner"):
        client.predict(made["link"], "not-the-owner-key", False, api_name="/share_results")


def test_an_abx_test_from_a_script(app):
    _url, client = app
    made = client.predict(handle_file(str(CLIP)), 0.0, 2.0, "abx", ["opus6"], 4, 3600, api_name="/share_create")
    pooled, _every = client.predict(
        made["url"], made["owner"], False, api_name="/share_results"
    )  # the whole URL works too
    assert pooled["kind"] == "abx" and pooled["plan"]["b_source"] == "opus6" and pooled["plan"]["trials"] == 4
