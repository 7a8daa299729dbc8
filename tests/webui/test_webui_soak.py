"""Issue 8, item 8: memory under load. 200 round trips through a live server (loopback):
the process's resident memory at the end is within 10 % of its level after the first 40
(the warm-up: allocator pools, Gradio's caches and the first spectrogram fill by then)."""

from __future__ import annotations

import gc
import logging
import socket
import time

import psutil
import pytest
import soundfile as sf
import torch
from gradio_client import Client, handle_file

from webui.app import UiOptions, build_app
from webui.server import ServerOptions, launch

REQUESTS = 200  # round trips in the soak
WARM_UP = 40  # requests before the reference level is taken
ALLOWED_GROWTH = 0.10  # end level may exceed the reference by this share
SOAK_LIMIT_S = 600.0  # safety net only: the soak stops here even on a very busy machine
CLIP_S = 0.25  # seconds of audio per request: the soak is about memory, not model time

logger = logging.getLogger(__name__)


def _rss_mib() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / (1 << 20)


@pytest.mark.slow
def test_memory_is_flat_over_200_round_trips(engine, tmp_path, speech):
    clip = tmp_path / "short.wav"
    sf.write(clip, speech(CLIP_S), 24_000, subtype="PCM_16")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ui = UiOptions(temp_root=tmp_path / "root")
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=port))
    levels: dict[int, float] = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the soak is about memory: spare a shared machine's cores from oversubscription
    try:
        client = Client(url, verbose=False)
        start = time.monotonic()
        for done in range(1, REQUESTS + 1):
            assert time.monotonic() - start < SOAK_LIMIT_S, f"only {done - 1} requests in {SOAK_LIMIT_S:.0f} s"
            out = client.predict(handle_file(str(clip)), api_name="/roundtrip")
            assert out[-1]["tokens"]["frames"] == 4
            if done % 20 == 0:
                levels[done] = _rss_mib()
        elapsed = time.monotonic() - start
    finally:
        torch.set_num_threads(threads)
        demo.close()
    reference, end = levels[WARM_UP], levels[REQUESTS]
    print(f"soak: {REQUESTS} round trips in {elapsed:.0f} s; RSS MiB by request: {levels}")
    assert end <= reference * (1 + ALLOWED_GROWTH), levels
