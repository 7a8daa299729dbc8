"""DATA may be a ``tokenize`` output: its codes are used as they are (the encoder never runs) with the
audio read again from the input its job names, checked against the recorded checksum; codes of another
model are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import TrainingError
from core.training import finetune


@pytest.fixture(scope="module")
def tokenized(tmp_path_factory, speech_folder, tiny_checkpoint):
    """``python -m core tokenize`` of the speech folder with the tiny checkpoint (a local Ray)."""
    from core.cli.main import main

    out = tmp_path_factory.mktemp("tok") / "codes"
    args = ["tokenize", str(speech_folder), "-o", str(out), "--model", str(tiny_checkpoint), "--device", "cpu"]
    assert main([*args, "--num-cpus", "1", "--no-progress"]) == 0
    return out


@pytest.mark.slow
def test_a_tokenize_output_trains_on_its_own_codes(small, tmp_path, tokenized, speech_folder):
    from core.dataset.shards import codes_of, read_shards

    out = tmp_path / "out"
    result = finetune(small(out, data=tokenized, steps=2))
    assert result["status"] == "done"
    table = next(read_shards(tokenized, ["index", "audio_codes"]))
    index, codes = int(table.column("index")[0].as_py()), codes_of(table, 0)
    assert np.array_equal(np.load(out / "prepared" / f"{index:06d}.codes.npy"), codes)
    assert json.loads((out / "split.json").read_text())["train"]


@pytest.mark.slow
def test_codes_of_another_model_are_refused(small, tmp_path, tokenized, second_checkpoint):
    with pytest.raises(TrainingError, match="were made by"):
        finetune(small(tmp_path / "out", data=tokenized, model=str(second_checkpoint)))
