"""A tokenize job killed mid-run (SIGKILL, Ray's processes with it) resumes to every file exactly
once: finished shards kept as they are, the rest written. Its own file, so the test's two Ray
starts run beside the other pipeline tests (make test gives whole files to each process)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

from core.dataset import shards

ROOT = Path(__file__).resolve().parents[3]
CLIPS = 8  # good clips (1 s each): four shards besides the first, enough to be killed between


def _cli(args, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.Popen(
        [sys.executable, "-m", "core", *map(str, args)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


KILL_AFTER_FIRST_SHARD = """
import os, signal, sys
from pathlib import Path
from core.dataset import shards
from core.dataset.job import tokenize
from core.dataset.pipeline import TokenizeOptions
from core.settings import Settings

data, out, model = map(Path, sys.argv[1:4])

def kill_at_first_shard(result):
    if shards.finished_shards(out):  # the first shard is committed: die here, mid-job, as a crash would
        os.kill(os.getpid(), signal.SIGKILL)

options = TokenizeOptions(shard_size=2, batch_files=1, num_cpus=2, object_store_mib=100)
tokenize(data, out, Settings(model=str(model), device="cpu"), options, show_progress=False, on_result=kill_at_first_shard)
"""


def _committed(out: Path) -> list[Path]:
    """The shards' commit marks: Parquet files and the error-only shards' marks."""
    return [*(out / "shards").glob("*.parquet"), *(out / "shards").glob(f"*{shards.EMPTY_MARK}")]


@pytest.mark.slow
def test_a_killed_run_resumes_to_every_file_exactly_once(tiny_checkpoint, tmp_path, speech):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(CLIPS):  # CLIPS // 2 shards of two clips, then the bad file alone in the last one
        sf.write(data / f"clip{i:02d}.wav", speech(1.0, seed=i), 24_000)
    (data / "clip99.wav").write_bytes(b"not audio")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    first = subprocess.Popen(  # its own process group: the kill takes Ray's processes too
        [sys.executable, "-c", KILL_AFTER_FIRST_SHARD, str(data), str(out), str(tiny_checkpoint)],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    assert first.wait(timeout=240) == -signal.SIGKILL  # it killed itself right after the first shard's commit
    with contextlib.suppress(ProcessLookupError):
        os.killpg(first.pid, signal.SIGKILL)  # Ray's processes, left behind by the kill
    # the first committed shard: a Parquet file, or the error-only shard's mark when that one finished first
    before = {p.name: p.stat().st_ino for p in _committed(out)}
    assert len(before) == 1 and not (out / "manifest.json").exists()

    args = ["tokenize", data, "-o", out, "--model", tiny_checkpoint, "--device", "cpu", "--shard-size", "2"]
    args += ["--batch-files", "1", "--num-cpus", "2", "--object-store-mb", "100", "--no-progress"]
    second = _cli(args)
    log, _ = second.communicate(timeout=300)
    assert second.returncode == 0, log
    assert "resumed" in log
    kept = {p.name: p.stat().st_ino for p in _committed(out)}
    assert all(kept[name] == inode for name, inode in before.items())  # finished shards kept, not rewritten
    after = {p.name for p in (out / "shards").glob("*.parquet")}
    # every shard finished; the last holds the one error and no rows
    assert shards.finished_shards(out) == set(range(CLIPS // 2 + 1)) and len(after) == CLIPS // 2
    indices = [i for table in shards.read_shards(out) for i in table.column("index").to_pylist()]
    errors = [e["index"] for e in shards.read_errors(out)]
    assert sorted(indices + errors) == list(range(CLIPS + 1)) and errors == [CLIPS]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"] == {"total": CLIPS + 1, "encoded": CLIPS, "errors": 1}
    assert manifest["timings"]["runs"][-1]["skipped_shards"] == 1
