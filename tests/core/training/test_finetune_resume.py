"""Nothing lost: a run stopped (or killed with SIGKILL) and resumed ends with the weights of the run
that was never interrupted; a stop keeps a resumable state and an exported checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from core.training import finetune

REPO = Path(__file__).resolve().parents[3]


def _weights(out: Path) -> dict:
    return torch.load(out / "state" / "latest.pt", map_location="cpu", weights_only=False)["decoder"]


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("adversarial", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["mel", "gan"])
def test_stop_then_resume_equals_an_uninterrupted_run(small, tmp_path, adversarial):
    """Mel only, and with the discriminators (they join after step 2: their state and optimizer resume too)."""
    changes = dict(steps=5, adversarial=adversarial, gan_warmup_steps=2, disc_channels=4)
    whole = tmp_path / "whole"
    finetune(small(whole, **changes))

    parts = tmp_path / "parts"
    stop = threading.Event()
    result = finetune(small(parts, **changes), on_progress=lambda r: r.get("step") == 3 and stop.set(), stop=stop)
    assert result["status"] == "stopped" and result["steps"] == 3
    assert (parts / "final" / "model.safetensors").is_file()  # Stop keeps a checkpoint
    resumed = finetune(small(parts, resume=True, **changes))
    assert resumed["status"] == "done" and resumed["steps"] == 5
    _same(_weights(whole), _weights(parts))
    steps = [
        json.loads(x)["step"] for x in (parts / "progress.jsonl").read_text().splitlines() if '"kind": "step"' in x
    ]
    assert steps == [1, 2, 3, 4, 5]


def test_resume_refuses_other_settings(small, tmp_path):
    out = tmp_path / "out"
    finetune(small(out, steps=2))
    with pytest.raises(Exception, match="learning_rate"):
        finetune(small(out, steps=4, resume=True, learning_rate=5e-4))


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tiny_checkpoint, speech_folder, small, tmp_path):
    """A real process killed with SIGKILL right after its first saved state; ``--resume`` then
    reaches the weights of an uninterrupted run at the same step."""
    args = [
        "--model", str(tiny_checkpoint), "--device", "cpu", "--precision", "fp32", "--batch-size", "2",
        "--segment-s", "0.64", "--learning-rate", "0.001", "--val-clips", "2", "--no-gan", "--eval-every", "0",
        "--seed", "0", "--no-progress",
    ]  # fmt: skip
    killed = tmp_path / "killed"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "core", "finetune", str(speech_folder), "-o", str(killed), "--steps", "1000", "--save-every", "2", *args],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    state = killed / "state" / "latest.pt"
    deadline = time.monotonic() + 600
    while not state.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = torch.load(state, map_location="cpu", weights_only=False)["step"]
    assert saved % 2 == 0 and saved < 8
    target = saved + 2
    done = subprocess.run(
        [sys.executable, "-m", "core", "finetune", str(speech_folder), "-o", str(killed), "--steps", str(target), "--save-every", "2", "--resume", *args],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    whole = tmp_path / "whole"
    finetune(small(whole, steps=target))
    _same(_weights(whole), _weights(killed))
