"""Issue 19, finding 9 for ``core tokenize``: a file name of any bytes is read, fingerprinted and
written like any other (the run crashed on it with a traceback)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow.parquet as pq
import soundfile as sf

from core.dataset import shards
from core.dataset.decode import decode_items
from core.dataset.fields import plan_fields
from core.dataset.inputs import read_inputs


def test_a_file_name_of_any_bytes_is_read_fingerprinted_and_written(tmp_path, tiny_engine, speech):
    folder = tmp_path / "in"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9.wav")  # Latin-1 bytes: not UTF-8
    sf.write(os.fsencode(folder / name), speech(0.5), 24_000)
    inputs = read_inputs(folder)
    assert len(inputs.items) == 1 and len(inputs.fingerprint()) == 64
    item = inputs.items[0]
    [(audio, sha, reason)] = list(decode_items([item.path], [item.locator], tiny_engine.settings.audio_limits()))
    assert reason == "" and audio is not None and len(sha) == 64
    done = shards.Done(item.index, item.key, item.source, sha, np.zeros((7, 16), np.int16), 12_000, item.extra)
    failed = shards.Failed(1, name, f"{name} could not be read")
    shards.shard_path(tmp_path / "out", 0).parent.mkdir(parents=True)
    shards.write_shard(tmp_path / "out", 0, [done], [failed], "tiny", {}, plan_fields([item.extra]))
    assert pq.read_table(shards.shard_path(tmp_path / "out", 0)).column("audio").to_pylist() == ["caf\\xe9.wav"]
    errors = shards.shard_path(tmp_path / "out", 0, ".errors.jsonl").read_text(encoding="utf-8")
    assert "caf\\\\xe9.wav" in errors
