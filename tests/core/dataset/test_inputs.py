"""Inputs of ``python -m core tokenize``: folders, fine-tuning JSONL manifests, Parquet tables."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.dataset.inputs import read_inputs
from core.errors import CodecError


def test_folder_is_recursive_sorted_and_audio_only(tmp_path):
    for name in ("b.wav", "a/c.flac", "a/notes.txt", "z/d.MP3"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    inputs = read_inputs(tmp_path)
    assert inputs.kind == "folder"
    assert [i.key for i in inputs.items] == ["a/c.flac", "b.wav", "z/d.MP3"]
    assert [i.index for i in inputs.items] == [0, 1, 2]
    assert inputs.items[0].path == str((tmp_path / "a/c.flac").resolve())
    assert inputs.skipped == {".txt": 1} and inputs.skipped_paths == ("a/notes.txt",)


def test_jsonl_keeps_every_field_resolves_paths_and_reports_bad_lines(tmp_path):
    lines = [
        json.dumps({"audio": "wav/a.wav", "text": "你好", "ref_audio": "ref.wav", "language": "Chinese"}),
        "{not json",
        json.dumps({"text": "no audio"}),
        "",
        json.dumps({"audio": "https://example.com/x.wav", "text": "remote"}),
        json.dumps({"audio": "/abs/b.wav", "text": "b"}),
    ]
    manifest = tmp_path / "train.jsonl"
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [i.key for i in read_inputs(manifest, root=Path("/")).items] == ["wav/a.wav", "/abs/b.wav"]
    inputs = read_inputs(manifest)  # /abs/b.wav lies outside the manifest's folder (issue 31): an error row
    assert [(i.index, i.key) for i in inputs.items] == [(0, "wav/a.wav")]
    assert inputs.items[0].path == str((tmp_path / "wav/a.wav").resolve())
    assert json.loads(inputs.items[0].extra) == {"text": "你好", "ref_audio": "ref.wav", "language": "Chinese"}
    reasons = {e.index: e.reason for e in inputs.errors}
    assert sorted(reasons) == [1, 2, 3, 4, 5]
    assert "not valid JSON" in reasons[1] and "'audio'" in reasons[2] and "URL" in reasons[4]
    assert "outside" in reasons[5] and "--data-root" in reasons[5]
    assert inputs.count == 6


def test_fingerprint_changes_with_the_input(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"audio": "a.wav", "text": "one"}) + "\n")
    first = read_inputs(manifest).fingerprint()
    assert read_inputs(manifest).fingerprint() == first
    manifest.write_text(json.dumps({"audio": "a.wav", "text": "two"}) + "\n")
    assert read_inputs(manifest).fingerprint() != first


def test_parquet_with_an_audio_column_and_a_named_one(tmp_path):
    table = pa.table({"wav_path": ["x.wav", None, "y.wav"], "speaker": ["s1", "s2", "s3"]})
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(CodecError, match="--audio-column"):
        read_inputs(tmp_path / "d.parquet")
    inputs = read_inputs(tmp_path / "d.parquet", audio_column="wav_path")
    assert [i.key for i in inputs.items] == ["x.wav", "y.wav"]
    assert json.loads(inputs.items[1].extra) == {"speaker": "s3"}
    assert [e.index for e in inputs.errors] == [1]


@pytest.mark.parametrize("name, message", [("missing", "does not exist"), ("list.csv", "neither a folder")])
def test_unusable_inputs_are_refused_with_advice(tmp_path, name, message):
    if name.endswith(".csv"):
        (tmp_path / name).write_text("a,b\n")
    with pytest.raises(CodecError, match=message):
        read_inputs(tmp_path / name)


def test_an_empty_folder_is_refused(tmp_path):
    with pytest.raises(CodecError, match="no audio files"):
        read_inputs(tmp_path)
