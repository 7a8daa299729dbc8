"""Parquet shards: atomic writes, resume bookkeeping, and the fine-tuning JSONL export."""

import json

import numpy as np
import pytest
import torch

from core.dataset import shards
from core.dataset.export import export_jsonl, write_outputs
from core.dataset.fields import plan_fields
from core.dataset.shards import Done, Failed, ShardWriter
from core.errors import CodecError
from core.tokens import load_tokens, make_token_file, save_tokens


def _done(index, frames, seed=0, extra=None):
    codes = np.random.default_rng(seed).integers(0, 2048, (frames, 16)).astype(np.int16)
    return Done(
        index,
        f"a{index}.wav",
        "",
        "ab" * 32,
        codes,
        frames * 1920 - 7,
        json.dumps(extra or {"text": f"t{index}"}),
    )


def test_a_shard_is_written_only_when_every_item_has_a_result(tmp_path):
    shards.check_job(tmp_path, {"items": 3})
    writer = ShardWriter(tmp_path, 2, "model", {"torch": "x"}, plan_fields([_done(i, 1).extra for i in range(3)]))
    writer.expect(0, {0, 1})
    writer.expect(1, {2})
    writer.add(_done(1, 3))
    assert shards.finished_shards(tmp_path) == set()
    writer.add(Failed(0, "a0.wav", "broken"))
    assert shards.finished_shards(tmp_path) == {0}
    assert not writer.complete
    writer.add(_done(2, 4))
    assert writer.complete and shards.finished_shards(tmp_path) == {0, 1}
    assert [e["index"] for e in shards.read_errors(tmp_path)] == [0]
    table = next(shards.read_shards(tmp_path))
    assert table.column("index").to_pylist() == [1]
    np.testing.assert_array_equal(shards.codes_of(table, 0), _done(1, 3).codes)
    assert table.schema.field("audio_codes").type.value_type.value_type.bit_width == 16  # int16 frames x 16
    assert table.column("text").to_pylist() == ["t1"]  # the input's fields are columns


def test_leftover_temporary_files_are_not_finished_shards(tmp_path):
    (tmp_path / shards.SHARD_DIR).mkdir()
    (tmp_path / shards.SHARD_DIR / ".shard-00003.parquet.tmp-99").write_bytes(b"half")
    (tmp_path / shards.SHARD_DIR / "shard-00003.errors.jsonl").write_text("")
    assert shards.finished_shards(tmp_path) == set()


def test_resume_only_onto_the_same_job_and_never_into_someone_elses_folder(tmp_path):
    out = tmp_path / "out"
    assert shards.check_job(out, {"input_sha256": "a", "shard_size": 2}) is False
    assert shards.check_job(out, {"input_sha256": "a", "shard_size": 2}) is True
    with pytest.raises(CodecError, match="shard_size"):
        shards.check_job(out, {"input_sha256": "a", "shard_size": 4})
    other = tmp_path / "other"
    other.mkdir()
    (other / "precious.txt").write_text("keep")
    with pytest.raises(CodecError, match="not empty"):
        shards.check_job(other, {"input_sha256": "a"})
    assert (other / "precious.txt").read_text() == "keep"


def test_finetune_jsonl_is_what_the_official_dataset_reads_and_round_trips_through_token_files(tmp_path):
    shards.check_job(tmp_path, {"items": 2})
    rows = [
        _done(0, 5, seed=1, extra={"text": "你好", "ref_audio": "r.wav", "language": "Chinese"}),
        _done(1, 2, seed=2),
    ]
    shards.write_shard(tmp_path, 0, rows, [], "model", {}, plan_fields(r.extra for r in rows))
    path, _ = export_jsonl(tmp_path, tmp_path / "ft.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["text"] == "你好" and lines[0]["ref_audio"] == "r.wav" and lines[0]["audio"] == "a0.wav"
    for line, row in zip(lines, rows, strict=True):
        codes = torch.tensor(line["audio_codes"], dtype=torch.long)  # as finetuning/dataset.py reads it
        assert codes.shape == (row.codes.shape[0], 16)
        token_file = make_token_file(codes.numpy(), row.original_samples, "model")
        again = load_tokens(save_tokens(token_file, tmp_path / f"{row.index}.npz"))
        np.testing.assert_array_equal(again.codes, row.codes)


def test_manifest_counts_files_hours_and_errors_over_all_shards(tmp_path):
    shards.check_job(tmp_path, {"items": 3})
    plan = plan_fields([_done(0, 1).extra])
    shards.write_shard(tmp_path, 0, [_done(0, 10), _done(1, 15)], [], "m", {}, plan)
    shards.write_shard(tmp_path, 1, [], [Failed(2, "x.wav", "too long")], "m", {}, plan)
    run = {"wall_s": 2.0, "files": 3}
    job = {"items": 3, "input": "in", "input_kind": "folder", "model": "m", "max_duration_s": 9.0, "max_file_mb": 1.0}
    manifest = write_outputs(tmp_path, job, {}, {}, run, jsonl=False, inputs={"skipped": {".txt": 2}})
    assert manifest["files"] == {"total": 3, "encoded": 2, "errors": 1}
    assert manifest["codes"]["frames"] == 25 and manifest["shards"] == 1  # Parquet files: shard 1 had no rows
    assert shards.finished_shards(tmp_path) == {0, 1} and (tmp_path / "shards" / "shard-00001.empty").exists()
    assert manifest["audio"]["seconds"] == pytest.approx((25 * 1920 - 14) / 24_000)
    assert json.loads((tmp_path / "errors.jsonl").read_text())["reason"] == "too long"
    again = write_outputs(
        tmp_path, job, {}, {}, {"wall_s": 1.0, "files": 0}, jsonl=False, inputs={"skipped": {".txt": 2}}
    )
    assert again["timings"]["wall_s"] == 3.0 and len(again["timings"]["runs"]) == 2
    card = (tmp_path / "README.md").read_text()
    assert "2 encoded of 3" in card and "1 errors" in card and "too long" in card and "`text`" in card
    assert "2 `.txt`" in card  # skipped files are named in the card
