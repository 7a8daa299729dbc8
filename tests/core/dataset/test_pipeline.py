"""The tokenize pipeline on a real local Ray with the tiny checkpoint: every input kind, codes equal
to ``python -m core encode``, bad files in errors.jsonl, and a real kill of a real run, resumed."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile as sf

from core.cli import main as cli
from core.dataset import shards
from core.dataset.job import tokenize
from core.dataset.pipeline import TokenizeOptions
from core.settings import Settings
from core.tokens import load_tokens

ROOT = Path(__file__).resolve().parents[3]
OPTIONS = TokenizeOptions(shard_size=2, batch_files=4, decode_files=2)


@pytest.fixture(scope="module")
def local_ray():
    """One small local Ray for this module: the pipeline reuses a Ray the process already runs."""
    from core.dataset.pipeline import ray_session

    with ray_session(TokenizeOptions(num_cpus=2, object_store_mib=100)) as ray:
        yield ray


def _codes_by_audio(out: Path) -> dict:
    found = {}
    for table in shards.read_shards(out):
        for row, audio in enumerate(table.column("audio").to_pylist()):
            assert audio not in found, f"{audio} is in the output twice"
            found[audio] = shards.codes_of(table, row)
    return found


def test_folder_codes_equal_cli_encodes_and_bad_files_are_listed(local_ray, tiny_checkpoint, tmp_path, speech):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    sf.write(data / "a.wav", speech(1.2, seed=1), 24_000)
    sf.write(data / "sub" / "b.flac", speech(2.5, seed=2, sample_rate=16_000), 16_000)
    stereo = np.stack([speech(0.7, seed=3), speech(0.7, seed=4)], axis=1)
    sf.write(data / "sub" / "c.wav", stereo, 24_000)
    (data / "broken.wav").write_bytes(b"RIFF, but not really")
    sf.write(data / "long.wav", speech(5.0, seed=5, sample_rate=8_000), 8_000, subtype="PCM_16")  # over 4 s
    sf.write(data / "big.wav", speech(3.0, seed=6), 24_000, subtype="PCM_16")  # 144 kB: over 0.12 MiB
    settings = Settings(model=str(tiny_checkpoint), device="cpu", max_duration_s=4.0, max_file_mb=0.12)
    out = tmp_path / "out"
    manifest = tokenize(data, out, settings, OPTIONS, show_progress=False)

    assert manifest["files"] == {"total": 6, "encoded": 3, "errors": 3}
    errors = {e["audio"]: e["reason"] for e in map(json.loads, (out / "errors.jsonl").read_text().splitlines())}
    assert sorted(errors) == ["big.wav", "broken.wav", "long.wav"]
    assert "MiB" in errors["big.wav"] and "4" in errors["long.wav"] and "audio file" in errors["broken.wav"]
    found = _codes_by_audio(out)
    assert sorted(found) == ["a.wav", "sub/b.flac", "sub/c.wav"]
    differing = 0  # frames: one near-tie flip allowed (batched vs lone fp32 rounding; tests/core/test_batching.py)
    for key, codes in found.items():
        encoded = tmp_path / "single" / key.replace("/", "_")
        flags = ["--model", str(tiny_checkpoint), "--device", "cpu", "--max-duration", "4", "--max-file-mb", "0.12"]
        assert cli.main(["encode", str(data / key), "-o", str(encoded), *flags]) == 0
        single = load_tokens(next(encoded.glob("*.npz"))).codes
        assert codes.shape == single.shape
        differing += int((codes != single).any(axis=1).sum())
    assert differing <= 1
    row = next(t for t in shards.read_shards(out) if t.num_rows).slice(0, 1).to_pylist()[0]
    assert len(row["source_sha256"]) == 64 and row["model"] == str(tiny_checkpoint)
    assert json.loads(row["versions"])["qwen-tts"]
    assert manifest["audio"]["seconds"] == pytest.approx(1.2 + 2.5 + 0.7, abs=1e-3)
    assert manifest["settings"]["engine"]["max_duration_s"] == 4.0


def test_jsonl_and_parquet_manifests_keep_their_fields(local_ray, tiny_checkpoint, tiny_engine, tmp_path, speech):
    sf.write(tmp_path / "x.wav", speech(1.0, seed=7), 24_000)
    sf.write(tmp_path / "y.wav", speech(1.6, seed=8), 24_000)
    lines = [
        {"audio": "x.wav", "text": "第一句", "ref_audio": "y.wav", "language": "Chinese"},
        {"audio": "missing.wav", "text": "gone"},
        {"audio": "y.wav", "text": "second"},
    ]
    manifest_path = tmp_path / "train.jsonl"
    manifest_path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines) + "{broken\n")
    settings = Settings(model=str(tiny_checkpoint), device="cpu")
    manifest = tokenize(manifest_path, tmp_path / "out", settings, OPTIONS, jsonl=True, show_progress=False)
    assert manifest["files"] == {"total": 4, "encoded": 2, "errors": 2}
    export = [json.loads(x) for x in (tmp_path / "out" / "finetune.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(x["audio"], x["text"]) for x in export] == [("x.wav", "第一句"), ("y.wav", "second")]
    assert export[0]["ref_audio"] == "y.wav" and export[0]["language"] == "Chinese"
    expected = tiny_engine.encode_array(speech(1.0, seed=7)).codes
    np.testing.assert_array_equal(np.array(export[0]["audio_codes"]), expected)
    reasons = [json.loads(x)["reason"] for x in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    assert "does not exist" in reasons[0] or "not found" in reasons[0].lower()
    assert "JSON" in reasons[1]

    pq.write_table(pa.table({"path": [str(tmp_path / "y.wav")], "speaker": ["s9"]}), tmp_path / "d.parquet")
    manifest = tokenize(
        tmp_path / "d.parquet", tmp_path / "pq", settings, OPTIONS, audio_column="path", jsonl=True, show_progress=False
    )
    assert manifest["files"]["encoded"] == 1
    row = json.loads((tmp_path / "pq" / "finetune.jsonl").read_text())
    assert row["speaker"] == "s9"
    np.testing.assert_array_equal(np.array(row["audio_codes"]), np.array(export[1]["audio_codes"]))


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


@pytest.mark.slow
def test_a_killed_run_resumes_to_every_file_exactly_once(tiny_checkpoint, tmp_path, speech):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(16):
        sf.write(data / f"clip{i:02d}.wav", speech(2.0, seed=i), 24_000)
    (data / "clip99.wav").write_bytes(b"not audio")
    out = tmp_path / "out"
    args = [
        "tokenize",
        data,
        "-o",
        out,
        "--model",
        tiny_checkpoint,
        "--device",
        "cpu",
        "--shard-size",
        "2",
        "--batch-files",
        "1",
        "--num-cpus",
        "2",
        "--object-store-mb",
        "100",
        "--no-progress",
    ]
    first = _cli(args, start_new_session=True)  # its own process group: the kill takes Ray's processes too
    deadline = time.monotonic() + 240
    while not shards.finished_shards(out) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    before = {p.name: p.stat().st_ino for p in (out / "shards").glob("*.parquet")}
    assert 0 < len(before) < 9, f"the kill came at {len(before)} of 9 shards; the test needs a run cut short"
    assert not (out / "manifest.json").exists()

    second = _cli(args)
    log, _ = second.communicate(timeout=300)
    assert second.returncode == 0, log
    assert "resumed" in log
    after = {p.name: p.stat().st_ino for p in (out / "shards").glob("*.parquet")}
    assert len(after) == 9 and all(after[name] == inode for name, inode in before.items())  # finished shards kept
    indices = [i for table in shards.read_shards(out) for i in table.column("index").to_pylist()]
    errors = [e["index"] for e in shards.read_errors(out)]
    assert sorted(indices + errors) == list(range(17)) and errors == [16]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"] == {"total": 17, "encoded": 16, "errors": 1}
    assert manifest["timings"]["runs"][-1]["skipped_shards"] == len(before)
