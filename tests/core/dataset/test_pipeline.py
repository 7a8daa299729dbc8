"""The tokenize pipeline on a real local Ray with the tiny checkpoint: every input kind, codes equal
to ``python -m core encode``, bad files in errors.jsonl, and a real kill of a real run, resumed."""

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile as sf

from core.cli import main
from core.dataset import shards
from core.dataset.job import tokenize
from core.dataset.pipeline import TokenizeOptions
from core.settings import Settings
from core.tokens import load_tokens
from tests.core.dataset.builders import as_file, audio_bytes, hub_parquet, tar_shard

pytestmark = pytest.mark.slow  # a real local Ray per module and tokenize jobs: ~2 min; make test runs them

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
    for i, ext in enumerate(("oga", "aif", "caf")):  # formats the old walk left out without a word
        as_file(data / "more", f"d{i}.{ext}", audio_bytes(ext, 0.6, seed=10 + i))
    (data / "notes.txt").write_text("transcripts are not audio")
    settings = Settings(model=str(tiny_checkpoint), device="cpu", max_duration_s=4.0, max_file_mb=0.12)
    out = tmp_path / "out"
    listed = tmp_path / "skipped.txt"
    manifest = tokenize(data, out, settings, OPTIONS, show_progress=False, list_skipped=listed)

    assert manifest["files"] == {"total": 9, "encoded": 6, "errors": 3}
    assert manifest["input"]["skipped"] == {".txt": 1} and listed.read_text() == "notes.txt\n"
    assert "1 `.txt`" in (out / "README.md").read_text()
    errors = {e["audio"]: e["reason"] for e in map(json.loads, (out / "errors.jsonl").read_text().splitlines())}
    assert sorted(errors) == ["big.wav", "broken.wav", "long.wav"]
    assert "MiB" in errors["big.wav"] and "4" in errors["long.wav"] and "audio file" in errors["broken.wav"]
    found = _codes_by_audio(out)
    assert sorted(found) == ["a.wav", "more/d0.oga", "more/d1.aif", "more/d2.caf", "sub/b.flac", "sub/c.wav"]
    differing = 0  # frames: one near-tie flip allowed (batched vs lone fp32 rounding; tests/core/nn/test_batching.py)
    for key, codes in found.items():
        encoded = tmp_path / "single" / key.replace("/", "_")
        flags = ["--model", str(tiny_checkpoint), "--device", "cpu", "--max-duration", "4", "--max-file-mb", "0.12"]
        assert main.main(["encode", str(data / key), "-o", str(encoded), *flags]) == 0
        single = load_tokens(next(encoded.glob("*.npz"))).codes
        assert codes.shape == single.shape
        differing += int((codes != single).any(axis=1).sum())
    assert differing <= 1
    row = next(t for t in shards.read_shards(out) if t.num_rows).slice(0, 1).to_pylist()[0]
    assert len(row["source_sha256"]) == 64 and row["model"] == str(tiny_checkpoint)
    assert json.loads(row["versions"])["qwen-tts"]
    assert manifest["audio"]["seconds"] == pytest.approx(1.2 + 2.5 + 0.7 + 3 * 0.6, abs=1e-3)
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


def _cli_codes(path: Path, folder: Path, checkpoint) -> np.ndarray:
    """``python -m core encode`` of one file (in process), its codes."""
    assert main.main(["encode", str(path), "-o", str(folder), "--model", str(checkpoint), "--device", "cpu"]) == 0
    return load_tokens(next(folder.glob("*.npz"))).codes


def test_hub_parquet_and_webdataset_codes_errors_read_back_and_resume(local_ray, tiny_checkpoint, tmp_path):
    datasets = pytest.importorskip("datasets")
    settings = Settings(model=str(tiny_checkpoint), device="cpu")
    files = {ext: audio_bytes(ext, 0.7 + i / 5, seed=20 + i) for i, ext in enumerate(("flac", "mp3", "wav"))}
    rows = [{"audio": {"bytes": data, "path": f"x.{ext}"}, "text": f"in {ext}"} for ext, data in files.items()]
    rows += [{"audio": {"bytes": b"", "path": "empty.wav"}, "text": "e"}, {"audio": None, "text": "none"}]
    table = hub_parquet(tmp_path / "train.parquet", rows)
    out = tmp_path / "pq"
    manifest = tokenize(table, out, settings, OPTIONS, jsonl=True, show_progress=False)
    assert manifest["files"] == {"total": 5, "encoded": 3, "errors": 2}
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert [(e["source"], e["audio"]) for e in errors] == [
        ("train.parquet", "empty.wav"),
        ("train.parquet", "train.parquet#4"),
    ]
    found = _codes_by_audio(out)
    for ext, data in files.items():  # codes equal `python -m core encode` of the same bytes as a file
        single = _cli_codes(as_file(tmp_path / "files", f"x.{ext}", data), tmp_path / f"enc-{ext}", tiny_checkpoint)
        np.testing.assert_array_equal(found[f"x.{ext}"], single)
    back = datasets.load_dataset("parquet", data_files=str(out / "shards" / "*.parquet"), split="train")
    assert back.num_rows == 3 and sorted(back["text"]) == ["in flac", "in mp3", "in wav"]
    first = back.sort("index")[0]
    np.testing.assert_array_equal(np.array(first["audio_codes"]), found["x.flac"])  # frames of 16 ints
    assert len(first["audio_codes"][0]) == 16 and first["frames"] == len(first["audio_codes"])
    assert datasets.load_dataset(str(out), split="train").num_rows == 3  # the card's data_files
    export = [json.loads(x) for x in (out / "finetune.jsonl").read_text().splitlines()]
    assert [x["text"] for x in export] == ["in flac", "in mp3", "in wav"]

    shards_dir = tmp_path / "shards"
    shards_dir.mkdir()
    for n, (ext, data) in enumerate(files.items()):
        members = [(f"s{n}/utt.{ext}", data), (f"s{n}/utt.json", json.dumps({"text": ext}).encode())]
        tar_shard(shards_dir / f"data-{n:03d}.tar", members + [(f"s{n}/bad.mp3", b"\xff\xfb" + bytes(300))])
    out = tmp_path / "wds"
    manifest = tokenize(str(shards_dir / "data-{000..002}.tar"), out, settings, OPTIONS, show_progress=False)
    assert manifest["files"] == {"total": 6, "encoded": 3, "errors": 3}
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert [(e["source"], e["audio"]) for e in errors] == [(f"data-{n:03d}.tar", f"s{n}/bad") for n in range(3)]
    found = _codes_by_audio(out)
    np.testing.assert_array_equal(found["s1/utt"], _codes_by_audio(tmp_path / "pq")["x.mp3"])
    for again_source, again_out in ((str(shards_dir / "data-{000..002}.tar"), out), (table, tmp_path / "pq")):
        again = tokenize(again_source, again_out, settings, OPTIONS, show_progress=False)  # resume: nothing left
        run = again["timings"]["runs"][-1]
        assert run["resumed"] and run["files"] == 0 and run["written_shards"] == 0
