"""A tokenize job on a Ray too small for its defaults: ``--num-cpus 1`` finishes (the encode actor and
the decode tasks share the one CPU) where it used to wait for ever without a word, a job that cannot
fit is refused in words before any work, a job whose CPUs are held by other work says what it waits
for, and length order keeps every row's codes with its own name. Real local Rays, the tiny checkpoint."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from core.audio.files import load_audio
from core.dataset import shards
from core.dataset.job import tokenize
from core.dataset.pipeline import TokenizeOptions, ray_session
from core.model.engine import Engine
from core.settings import Settings

pytestmark = pytest.mark.slow  # Ray starts and tokenize jobs: about a minute each on 2 cores

ROOT = Path(__file__).resolve().parents[3]
JOB_LIMIT_S = 420  # a job that takes longer is the hang this file is about


def _cli(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run(
        [sys.executable, "-m", "core", "tokenize", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=JOB_LIMIT_S,
    )


def _folder(path: Path, speech, lengths_s: list[float]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for i, seconds in enumerate(lengths_s):
        sf.write(path / f"clip{i:02d}.wav", speech(seconds, seed=i), 24_000)
    return path


def _codes_by_name(out: Path) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    for table in shards.read_shards(out):
        for row, name in enumerate(table.column("audio").to_pylist()):
            assert name not in found, f"{name} is in the output twice"
            found[name] = shards.codes_of(table, row)
    return found


def test_one_cpu_finishes_instead_of_waiting_for_ever(tiny_checkpoint, tmp_path, speech):
    data = _folder(tmp_path / "data", speech, [0.6, 1.0, 0.8])
    out = tmp_path / "out"
    done = _cli(data, "-o", out, "--model", tiny_checkpoint, "--device", "cpu", "--num-cpus", "1", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "share" in done.stderr and "--num-cpus" in done.stderr  # it said how it fitted the one CPU
    assert sorted(_codes_by_name(out)) == ["clip00.wav", "clip01.wav", "clip02.wav"]


def test_a_job_that_cannot_fit_is_refused_in_words_before_any_work(tiny_checkpoint, tmp_path, speech):
    data = _folder(tmp_path / "data", speech, [0.6])
    out = tmp_path / "out"
    args = ["--model", tiny_checkpoint, "--device", "cpu", "--num-cpus", "1", "--actors", "20", "--no-progress"]
    refused = _cli(data, "-o", out, *args)
    assert refused.returncode != 0
    said = refused.stdout + refused.stderr
    assert "too few to hold 20 encode actor(s) and one decode task" in said and "wait for ever" in said
    assert "Traceback" not in said
    assert not list(out.glob("shards/*.parquet"))


def test_a_job_whose_cpus_are_held_elsewhere_says_what_it_waits_for_then_finishes(
    tiny_checkpoint, tmp_path, speech, caplog
):
    data = _folder(tmp_path / "data", speech, [0.6, 0.9])
    out = tmp_path / "out"
    settings = Settings(model=str(tiny_checkpoint), device="cpu")
    options = TokenizeOptions(num_cpus=2, object_store_mib=100, stall_after_s=5.0)
    with ray_session(options) as ray:

        @ray.remote(num_cpus=2)
        class OtherWork:  # another job on the cluster holding every CPU
            def ping(self) -> bool:
                return True

        other = OtherWork.remote()  # type: ignore[attr-defined]
        assert ray.get(other.ping.remote(), timeout=120)
        result: dict = {}
        job = threading.Thread(
            target=lambda: result.update(m=tokenize(data, out, settings, options, show_progress=False)), daemon=True
        )
        with caplog.at_level(logging.WARNING, logger="core.dataset.stall"):
            job.start()
            job.join(timeout=20)  # stall_after_s is 5 s: it has spoken by now
            assert job.is_alive()
            said = caplog.text
            ray.kill(other)
            job.join(timeout=JOB_LIMIT_S)
    assert "no result for" in said and "no CPU free for a decode task" in said and "2 of 2 held" in said
    assert not job.is_alive() and result["m"]["files"]["encoded"] == 2


def test_length_order_keeps_every_rows_codes_with_its_own_name(tiny_checkpoint, tmp_path, speech):
    lengths = [0.4, 2.2, 0.9, 1.6, 0.5, 2.0, 1.1, 0.7]  # names in another order than lengths
    data = _folder(tmp_path / "data", speech, lengths)
    out = tmp_path / "out"
    settings = Settings(model=str(tiny_checkpoint), device="cpu")
    options = TokenizeOptions(shard_size=4, batch_files=4, decode_files=2, num_cpus=2, object_store_mib=100)
    tokenize(data, out, settings, options, show_progress=False)
    found = _codes_by_name(out)
    engine = Engine(settings)
    assert engine.load(), engine.error
    differing = 0
    for i in range(len(lengths)):
        lone = engine.encode(load_audio(data / f"clip{i:02d}.wav")).codes  # the file as written (16-bit)
        ours = found[f"clip{i:02d}.wav"]
        assert ours.shape == lone.shape  # a row with another clip's codes would have another length
        differing += int((ours != lone).any(axis=1).sum())
    assert differing <= 1  # one near-tie frame allowed (batched vs lone fp32 sums: tests/core/nn/test_batching.py)
