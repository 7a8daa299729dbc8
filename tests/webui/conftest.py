"""Web UI fixtures: handlers, a live server, clips (the engine is tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.ports import reserve_port
from tests.webui.tab_handlers import Tabs
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch
from webui.serving.workspace import Workspace


def pytest_configure(config):
    # Gradio 6.17 still uses a Starlette constant Starlette deprecated; not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:'HTTP_422_UNPROCESSABLE_ENTITY' is deprecated")


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on, reserved for this test process (tests/ports.py)."""
    return reserve_port()


@pytest.fixture
def tabs(engine, tmp_path) -> Tabs:
    return Tabs.of(engine, Workspace(tmp_path / "work"))


@pytest.fixture(scope="session")
def clip_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("clips")


@pytest.fixture
def clip(tmp_path, speech) -> Path:
    """3 s of speech-like audio at 24 kHz mono, 16-bit WAV (a name with a space)."""
    path = tmp_path / "speech 3s.wav"
    sf.write(path, speech(3.0), 24_000, subtype="PCM_16")
    return path


@pytest.fixture(scope="session")
def bad_audio(clip_dir) -> Path:
    """A text file with an audio name."""
    path = clip_dir / "not_audio.wav"
    path.write_text("this is not a RIFF file\n" * 20)
    return path


@pytest.fixture(scope="session")
def bad_tokens(clip_dir) -> Path:
    """An .npz that is not a Codec Workbench token file."""
    path = clip_dir / "wrong.npz"
    np.savez(path, something=np.arange(10))
    return path


@pytest.fixture(scope="session")
def server(engine, tmp_path_factory):
    """A live server on a free loopback port; yields (url, demo)."""
    ui = UiOptions(temp_root=tmp_path_factory.mktemp("server-work"))
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    yield url, demo
    demo.close()


@pytest.fixture(scope="session")
def client(server):
    from gradio_client import Client

    return Client(server[0], verbose=False)
