"""``python -m core serve-decode`` as a real process: it serves ``/decode/ws`` and ``/health`` on its port,
streams the engine's decode to the Python client, and stops on SIGTERM; a port in use is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from core.codec import NUM_CODEBOOKS
from core.serving.stream_client import StreamClient
from tests.ports import reserve_port

pytestmark = pytest.mark.slow  # a process of its own: the interpreter and torch start again

ROOT = Path(__file__).resolve().parents[3]


def test_serve_decode_streams_and_stops(tiny_checkpoint, engine):
    port = reserve_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "core", "serve-decode", "--port", str(port), "--model", str(tiny_checkpoint)]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        health = None
        while health is None:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "serve-decode did not answer /health"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    health = json.loads(r.read())
            except OSError:
                time.sleep(0.5)
        assert health["state"] == "ready" and health["streams_in_use"] == 0
        codes = np.random.default_rng(2).integers(0, 2048, size=(9, NUM_CODEBOOKS))
        with StreamClient(f"ws://127.0.0.1:{port}/decode/ws", format="float32") as client:
            got = np.concatenate([client.push(codes[:4]), client.push(codes[4:]), client.end()])
        ref = engine.decode(codes).samples  # the same checkpoint in this process
        err = float(np.sum((got.astype(np.float64) - ref) ** 2))
        assert err == 0 or 10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err) >= 80
        busy = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert busy.returncode == 1 and f"cannot serve on 127.0.0.1:{port}" in busy.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
