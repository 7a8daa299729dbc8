"""The second checkpoint on the System tab (its state; picking a folder the operator offers) and the
comparison through the API (gradio_client on a live server): the named endpoints take and return
the sources."""

from __future__ import annotations

import shutil

import gradio as gr
import pytest

from core.model import second
from core.model.engine import Engine
from core.settings import Settings
from webui.serving.workspace import Workspace
from webui.tabs.second_model import SecondHandlers, checkpoint_folders

OPERATOR = {"host": "127.0.0.1", "port": 50000}  # the operator's browser on the server's own machine
EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9"}, client=OPERATOR)
ZH = gr.Request(headers={"accept-language": "zh-CN,zh;q=0.9"}, client=OPERATOR)


@pytest.fixture
def offered(tmp_path, second_checkpoint):
    """An operator's folder of checkpoints: the second tiny one, and a folder that is not a checkpoint."""
    root = tmp_path / "models"
    shutil.copytree(second_checkpoint, root / "finetuned")
    (root / "notes").mkdir()
    return root


def test_a_picked_checkpoint_loads_beside_the_first_and_unloads(tiny_checkpoint, offered, tmp_path):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    assert engine.load()
    h = SecondHandlers(engine, Workspace(tmp_path / "work"), offered)
    assert checkpoint_folders(offered) == ["finetuned"]
    text, info = h.state(EN)
    assert info == {"state": "none"} and "No second checkpoint" in text
    text, info = h.load("finetuned", "bf16-decoder", EN)
    assert info["state"] == "ready" and info["decode_dtype"] == "bfloat16" and "passed" in text
    assert second.ready_second(engine) is not None
    assert "第二个检查点已加载" in h.state(ZH)[0]
    with pytest.raises(gr.Error, match="not a checkpoint folder"):
        h.load("../../etc", "same", EN)  # only names from the operator's folder
    with pytest.raises(gr.Error, match="not a checkpoint folder"):
        h.load("notes", "same", EN)
    assert h.unload(EN)[1] == {"state": "none"} and engine.compare is None


def test_picking_is_off_unless_the_operator_offers_a_folder(engine, tmp_path):
    h = SecondHandlers(engine, Workspace(tmp_path / "work"), None)
    with pytest.raises(gr.Error, match="--compare-models-dir"):
        h.load("anything", "same", EN)


def test_a_refusal_is_shown_with_its_figures(tiny_checkpoint, offered, tmp_path):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", max_batch_memory_fraction=1e-6))
    assert engine.load()
    text, info = SecondHandlers(engine, Workspace(tmp_path / "work"), offered).load("finetuned", "same", EN)
    assert info["state"] == "failed" and "does not fit" in text and "GiB" in text


def test_the_named_endpoints_take_and_return_the_sources(client, clip):
    from gradio_client import handle_file

    names = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
    assert {"/roundtrip", "/timeline", "/compare_table", "/second_state"} <= names
    original, reconstruction, *_, details = client.predict(
        handle_file(str(clip)), ["opus6"], False, api_name="/roundtrip"
    )
    assert [s["id"] for s in details["compare"]["sources"]] == ["opus6"]
    manifest, _timeline = client.predict(
        handle_file(original), handle_file(reconstruction), details, api_name="/timeline"
    )
    assert '"opus6"' in manifest and '"residuals"' in manifest
    table_md, placing_md, table = client.predict(
        handle_file(original), handle_file(reconstruction), manifest, api_name="/compare_table"
    )
    assert [c["source"]["id"] for c in table["table"]["columns"]] == ["original", "reconstruction", "opus6"]
    assert "Opus 6 kbit/s" in table_md and table["placing"]["random_weights"] is True
    # a client cannot make the server read a file it did not write
    forged = {"sources": [{"id": "x", "kind": "anchor", "wav": "/etc/hostname.wav"}]}
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="not a file this server wrote"):
        client.predict(handle_file(original), handle_file(reconstruction), forged, api_name="/compare_table")
