"""The parity checks on a GPU (device machine): the engine's decode judged identical to itself through a
WAV, the official chunked_decode differing from its first 300-frame seam, and the precision sweep's rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import soundfile as sf
import torch

from core.codec import SAMPLE_RATE
from core.model.engine import Engine
from core.nn import decoding
from core.parity import decode_parity, precision
from core.settings import Settings
from tests.conftest import speechlike

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_engine(tiny_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cuda:0"))
    assert engine.load()
    return engine


@pytest.fixture(autouse=True)
def strict_fp32():
    """Both sides with TF32 off (NOTES.md: compare two paths only with the same TF32 flags)."""
    with precision.tf32(False):
        yield


def test_decode_parity_on_the_gpu(gpu_engine, tmp_path):
    x = speechlike(25.0, seed=1)
    codes = gpu_engine.encode_array(x).codes
    ours = gpu_engine.decode(codes).samples
    np.save(tmp_path / "c.npy", codes)
    sf.write(tmp_path / "ours.wav", ours, SAMPLE_RATE, subtype="FLOAT")
    same = decode_parity.check_decode(gpu_engine, tmp_path / "c.npy", tmp_path / "ours.wav")
    assert same.verdict.kind == "identical", same.verdict.sentence
    with gpu_engine.model_work("decode") as (model, _), torch.inference_mode():
        official = decoding.decode_official(model, torch.from_numpy(codes).to("cuda:0")).float().cpu().numpy()
    sf.write(tmp_path / "official.wav", official, SAMPLE_RATE, subtype="FLOAT")
    result = decode_parity.check_decode(gpu_engine, tmp_path / "c.npy", tmp_path / "official.wav")
    assert result.verdict.kind == "differs" and result.verdict.cause == "seam", result.verdict.sentence
    assert result.verdict.frame == 300


def test_the_precision_sweep_on_the_gpu(gpu_engine):
    sweep = precision.sweep(gpu_engine, speechlike(4.0, seed=2))
    rows = {r.precision: r for r in sweep.rows}
    assert list(rows) == ["float32", "tf32", "bfloat16", "float16"]
    for r in rows.values():
        assert r.error is None and r.decode_s > 0
    assert rows["float32"].snr_db == math.inf
    assert all(r.snr_db is not None and r.snr_db > 0 for r in list(rows.values())[1:])
    assert sweep.device_name
