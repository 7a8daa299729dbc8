"""Issue 31, finding 1: a path a dataset names stays inside the dataset's own root (the table's folder,
the manifest's folder, the given folder) or is an error row naming the rule, and the file is never
opened; every file a row names is sized from ``stat()`` before it is read; special files are refused
with their kind. A Hub Parquet row ``{"bytes": null, "path": "/abs/path"}`` read any local file before."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.audio.blocks import AudioLimits
from core.dataset.decode import decode_items
from core.dataset.inputs import read_inputs
from core.units import MIB
from tests.core.dataset.builders import as_file, audio_bytes, hub_parquet

LIMITS = AudioLimits()
RULE = "outside"


def _decoded(inputs, limits=LIMITS):
    return list(decode_items([i.path for i in inputs.items], [i.locator for i in inputs.items], limits))


@pytest.fixture
def private(tmp_path):
    """A private WAV and a FIFO (reading it would block: a file that cannot be read) outside the dataset."""
    home = tmp_path / "home"
    wav = as_file(home, "private.wav", audio_bytes("wav", 0.5, seed=9))
    fifo = home / "pipe.wav"
    os.mkfifo(fifo)
    return wav, fifo


def test_a_hub_parquet_row_naming_a_file_outside_its_folder_is_an_error_row(tmp_path, private):
    wav, fifo = private
    data = tmp_path / "dataset"
    data.mkdir()
    as_file(data, "inside.wav", audio_bytes("wav", 0.5, seed=1))
    rows = [
        {"audio": {"bytes": None, "path": str(wav)}},  # absolute, outside
        {"audio": {"bytes": None, "path": "../home/private.wav"}},  # relative, climbing out
        {"audio": {"bytes": None, "path": str(fifo)}},  # would block if it were opened
        {"audio": {"bytes": None, "path": "inside.wav"}},  # beside the table: read
    ]
    inputs = read_inputs(hub_parquet(data / "t.parquet", rows, row_group_size=4))
    decoded = _decoded(inputs)
    for audio, _, reason in decoded[:3]:
        assert audio is None and RULE in reason and "--data-root" in reason, reason
    assert "not a regular file" not in decoded[2][2]  # refused by the rule, before any stat of the FIFO
    assert decoded[3][0] is not None and decoded[3][2] == ""


def test_a_manifest_or_path_column_naming_a_file_outside_is_an_error_row(tmp_path, private):
    wav, _ = private
    data = tmp_path / "dataset"
    as_file(data, "inside.wav", audio_bytes("wav", 0.5, seed=1))
    lines = [{"audio": str(wav)}, {"audio": "../home/private.wav"}, {"audio": "inside.wav"}]
    manifest = data / "m.jsonl"
    manifest.write_text("".join(json.dumps(x) + "\n" for x in lines))
    inputs = read_inputs(manifest)
    assert [i.key for i in inputs.items] == ["inside.wav"]
    assert len(inputs.errors) == 2 and all(RULE in e.reason for e in inputs.errors)
    widened = read_inputs(manifest, root=tmp_path)  # --data-root: the operator names a wider root
    assert len(widened.items) == 3 and not widened.errors


def test_a_symlink_in_a_folder_leading_out_is_an_error_row(tmp_path, private):
    wav, _ = private
    data = tmp_path / "dataset"
    as_file(data, "inside.wav", audio_bytes("wav", 0.5, seed=1))
    (data / "link.wav").symlink_to(wav)
    inputs = read_inputs(data)
    assert [i.key for i in inputs.items] == ["inside.wav"]
    assert [e.key for e in inputs.errors] == ["link.wav"] and RULE in inputs.errors[0].reason


def test_a_special_file_is_refused_with_its_kind(tmp_path):
    data = tmp_path / "dataset"
    data.mkdir()
    os.mkfifo(data / "pipe.wav")
    rows = [{"audio": {"bytes": None, "path": "pipe.wav"}}]
    inputs = read_inputs(hub_parquet(data / "t.parquet", rows, row_group_size=1))
    ((audio, _, reason),) = _decoded(inputs)
    assert audio is None and "FIFO" in reason, reason


SPARSE = """
import json, resource, sys
from core.audio.blocks import AudioLimits
from core.dataset.decode import decode_items
from core.dataset.inputs import read_inputs
inputs = read_inputs(sys.argv[1])
limits = AudioLimits(max_file_bytes=100 * 2**20)
paths, locators = [i.path for i in inputs.items], [i.locator for i in inputs.items]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
reasons = [r for _, _, r in decode_items(paths, locators, limits)]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kib": after - before, "reasons": reasons}))
"""


@pytest.mark.slow
def test_a_sparse_1_5_gb_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    """--max-file-mb 100 and a 1.5 GB (sparse) file a Parquet row names: refused from its size, the
    decode worker's peak RSS grows by < 100 MB (1,716 MiB before)."""
    data = tmp_path / "dataset"
    data.mkdir()
    with open(data / "huge.wav", "wb") as f:
        f.truncate(1536 * MIB)
    for name, rows in {
        "struct.parquet": [{"audio": {"bytes": None, "path": "huge.wav"}}],
    }.items():
        table = hub_parquet(data / name, rows, row_group_size=1)
        out = subprocess.run([sys.executable, "-c", SPARSE, str(table)], capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.splitlines()[-1])
        assert "limit" in result["reasons"][0], result
        assert result["grew_kib"] < 100 * 1024, result
