"""Issue 31, finding 11 (the tokenize outputs): ``finetune.jsonl`` is standard JSON (NaN and infinity
are null, counted in the manifest; strict parsers refused Python's ``NaN`` before), an input column
named ``audio_codes`` keeps its renamed column's name as in the Parquet shards (it was silently
replaced), and a run whose output folder lies inside its input folder never reads it as input."""

from __future__ import annotations

import json
import math

import numpy as np

from core.dataset import shards
from core.dataset.export import export_jsonl, write_outputs
from core.dataset.fields import plan_fields
from core.dataset.inputs import read_inputs
from core.dataset.shards import Done
from tests.core.dataset.builders import as_file, audio_bytes


def _strict(line: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(line, parse_constant=refuse)


def test_finetune_jsonl_is_standard_json_and_keeps_an_input_audio_codes_column(tmp_path):
    shards.check_job(tmp_path, {"items": 1})
    codes = np.zeros((3, 16), np.int16)
    extra = json.dumps({"score": math.nan, "gain": [1.0, math.inf], "audio_codes": "theirs"})
    row = Done(0, "a.wav", "", "ab" * 32, codes, 3 * 1920, extra)
    shards.write_shard(tmp_path, 0, [row], [], "m", {}, plan_fields([extra]))
    path, nulls = export_jsonl(tmp_path, tmp_path / "ft.jsonl")
    (line,) = [_strict(x) for x in path.read_text().splitlines()]
    assert line["score"] is None and line["gain"] == [1.0, None] and nulls == 2
    assert line["input_audio_codes"] == "theirs" and line["audio_codes"] == codes.tolist()
    job = {"items": 1, "input": "in", "input_kind": "jsonl", "model": "m", "max_duration_s": 9.0, "max_file_mb": 1.0}
    manifest = write_outputs(tmp_path, job, {}, {}, {"wall_s": 1.0, "files": 1}, jsonl=True)
    assert "2 field value(s)" in manifest["outputs"]["jsonl_note"]


def test_a_run_never_reads_its_own_output_folder_as_input(tmp_path):
    data = tmp_path / "data"
    as_file(data, "a.wav", audio_bytes("wav", 0.5, seed=1))
    out = data / "codes"
    as_file(out / "shards", "shard-00000.parquet", b"PAR1")
    (out / "finetune.jsonl").write_text("{}\n")
    inputs = read_inputs(data, exclude=out)
    assert [i.key for i in inputs.items] == ["a.wav"] and inputs.skipped == {}
