"""A live server for the shared listening tests (issue 28: test_share, test_share_browser): the tiny
checkpoint with every anchor, answers in a data folder of its own, the whole app (``build_app``) on a
free port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from core.model.engine import Engine
from core.settings import Settings
from tests.ports import reserve_port
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch


@contextmanager
def shared_test_server(
    checkpoint, tmp_path_factory, name: str, host: str = "127.0.0.1", public_origin: str = ""
) -> Iterator[tuple[str, Engine, UiOptions]]:
    """(the server's URL without a trailing slash, its engine, its UI options) while it runs;
    ``name`` names its data and work folders; ``host``: the address it listens on."""
    data = tmp_path_factory.mktemp(f"{name}-data")
    engine = Engine(Settings(model=str(checkpoint), device="cpu", data_dir=str(data), anchors="all"))
    assert engine.warm_up().ok, engine.error
    ui = UiOptions(temp_root=tmp_path_factory.mktemp(f"{name}-work"), public_origin=public_origin)
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(host=host, port=reserve_port()))
    try:
        yield url.rstrip("/"), engine, ui
    finally:
        demo.close()
