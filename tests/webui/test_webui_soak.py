"""Issue 8, item 8: memory under load. 200 round trips through a live server (loopback, plain
HTTP as any client would send them: the clip uploaded once, then ``/gradio_api/call/roundtrip``
and its event stream, waiting out the per-client rate limit's 429s): the process's resident memory at the end is within 10 % of its level
after the first 40 (the warm-up: allocator pools, Gradio's caches, the first figures)."""

from __future__ import annotations

import gc
import json
import sys
import time
import urllib.error
import urllib.request

import psutil
import pytest
import soundfile as sf
import torch

from tests.ports import reserve_port
from webui.app import build_app
from webui.options import UiOptions
from webui.server import ServerOptions, launch

REQUESTS = 200  # round trips in the soak
WARM_UP = 40  # requests before the reference level is taken
EVERY = 20  # requests between two memory readings
ALLOWED_GROWTH = 0.10  # end level may exceed the reference by this share
SOAK_LIMIT_S = 900.0  # safety net only: the soak stops here even on a very busy machine
CLIP_S = 0.25  # seconds of audio per request: the soak is about memory, not model time


def _rss_mib() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / (1 << 20)


def _upload(url: str, path) -> str:
    body = (
        b'--XX\r\nContent-Disposition: form-data; name="files"; filename="short.wav"\r\n\r\n'
        + path.read_bytes()
        + b"\r\n--XX--\r\n"
    )
    req = urllib.request.Request(url + "gradio_api/upload", body, {"Content-Type": "multipart/form-data; boundary=XX"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())[0]


def _roundtrip(url: str, server_path: str) -> dict:
    """One round trip through the API; the event's output data."""
    # the clip, no reference codecs, no second checkpoint: the round trip itself is what is soaked
    payload = json.dumps({"data": [{"path": server_path, "meta": {"_type": "gradio.FileData"}}, [], False]}).encode()
    req = urllib.request.Request(url + "gradio_api/call/roundtrip", payload, {"Content-Type": "application/json"})
    while True:  # as a polite client does: a 429 (the server's per-client rate) waits its Retry-After
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                event_id = json.loads(r.read())["event_id"]
            break
        except urllib.error.HTTPError as e:
            if e.code != 429:
                raise
            time.sleep(float(e.headers.get("Retry-After") or 1))
    with urllib.request.urlopen(url + f"gradio_api/call/roundtrip/{event_id}", timeout=120) as r:
        event = None
        for raw in r:  # the event stream ends after "complete" or "error"
            line = raw.decode().strip()
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                assert event == "complete", line
                return json.loads(line.split(":", 1)[1])[-1]
    raise AssertionError("the event stream ended without a result")


@pytest.mark.slow
@pytest.mark.long  # make test-long (CI runs it after make test)
def test_memory_is_flat_over_200_round_trips(engine, tmp_path, speech):
    clip = tmp_path / "short.wav"
    sf.write(clip, speech(CLIP_S), 24_000, subtype="PCM_16")
    port = reserve_port()
    ui = UiOptions(temp_root=tmp_path / "root")
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=port))
    levels: dict[int, float] = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # memory is measured, not speed: spare a shared machine oversubscription
    try:
        server_path = _upload(url, clip)
        start = time.monotonic()
        for done in range(1, REQUESTS + 1):
            assert time.monotonic() - start < SOAK_LIMIT_S, f"only {done - 1} requests in {SOAK_LIMIT_S:.0f} s"
            assert _roundtrip(url, server_path)["tokens"]["frames"] == 4
            if done % EVERY == 0:
                levels[done] = round(_rss_mib())
                print(
                    f"soak: {done} requests, {time.monotonic() - start:.0f} s, RSS {levels[done]} MiB",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        torch.set_num_threads(threads)
        demo.close()
    assert levels[REQUESTS] <= levels[WARM_UP] * (1 + ALLOWED_GROWTH), levels
