"""Issue 19, finding 9 for ``core tokenize``: a file name of any bytes and one bad byte in a JSONL
manifest are rows like any other (the run went on to a traceback before)."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow.parquet as pq
import soundfile as sf

from core.dataset import shards
from core.dataset.inputs import read_inputs
from core.dataset.pipeline import decode_files


def test_a_jsonl_line_with_a_bad_byte_is_an_error_row_and_the_others_go_on(tmp_path, speech):
    sf.write(tmp_path / "a.wav", speech(0.5), 24_000)
    good = json.dumps({"audio": "a.wav", "text": "hi"}).encode()
    (tmp_path / "m.jsonl").write_bytes(good + b"\n" + b'{"audio": "b\xff.wav"}\n' + good + b"\n")
    inputs = read_inputs(tmp_path / "m.jsonl")
    assert [i.index for i in inputs.items] == [0, 2]
    assert [(e.index, e.key) for e in inputs.errors] == [(1, "line 2")] and "not UTF-8" in inputs.errors[0].reason


def test_a_file_name_of_any_bytes_is_read_fingerprinted_and_written(tmp_path, tiny_engine, speech):
    folder = tmp_path / "in"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9.wav")  # Latin-1 bytes: not UTF-8
    sf.write(os.fsencode(folder / name), speech(0.5), 24_000)
    inputs = read_inputs(folder)
    assert len(inputs.items) == 1 and len(inputs.fingerprint()) == 64
    decoded = decode_files({"path": [inputs.items[0].path], "index": [0]}, tiny_engine.settings.audio_limits())
    assert decoded["error"][0] == "" and len(decoded["samples"][0]) > 0
    item = inputs.items[0]
    done = shards.Done(item.index, item.key, item.path, "0" * 64, np.zeros((7, 16), np.int16), 12_000, "{}")
    failed = shards.Failed(1, name, f"{name} could not be read")
    shards.shard_path(tmp_path / "out", 0).parent.mkdir(parents=True)
    shards.write_shard(tmp_path / "out", 0, [done], [failed], "tiny", {})
    table = pq.read_table(shards.shard_path(tmp_path / "out", 0))
    assert table.column("audio").to_pylist() == ["caf\\xe9.wav"]
    errors = shards.shard_path(tmp_path / "out", 0, ".errors.jsonl").read_text(encoding="utf-8")
    assert "caf\\\\xe9.wav" in errors
