"""python -m core parity / encode-parity / precision, in process (``cli`` fixture)."""

from __future__ import annotations

import json

import numpy as np
import soundfile as sf

from core.codec import SAMPLE_RATE
from core.model.engine import Engine
from core.settings import Settings
from tests.conftest import speechlike


def _engine(checkpoint) -> Engine:
    engine = Engine(Settings(model=str(checkpoint), device="cpu"))
    assert engine.load()
    return engine


def test_parity_says_rounding_for_a_16_bit_copy_and_writes_the_report(cli, tiny_checkpoint, tmp_path):
    engine = _engine(tiny_checkpoint)
    x = speechlike(2.0, seed=4)
    codes = engine.encode_array(x).codes
    np.save(tmp_path / "codes.npy", codes)
    sf.write(tmp_path / "theirs.wav", engine.decode(codes).samples, SAMPLE_RATE, subtype="PCM_16")
    parity = ("parity", tmp_path / "codes.npy", tmp_path / "theirs.wav", "--model", tiny_checkpoint, "--device", "cpu")
    report = ("--report", tmp_path / "r" / "parity.html")
    out = cli(*parity, *report)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Rounding only: within 1 LSB")
    page = (tmp_path / "r" / "parity.html").read_text(encoding="utf-8")
    assert "Rounding only" in page and (tmp_path / "r" / "parity.png").is_file()
    again = cli(*parity, *report)
    assert again.returncode == 1 and "already exists" in again.stderr
    js = cli(*parity, "--json")
    doc = json.loads(js.stdout)
    assert doc["verdict"]["kind"] == "rounding" and doc["alignment"]["offset_samples"] == 0


def test_parity_refuses_bad_input_in_one_line_before_loading(cli, tmp_path):
    np.save(tmp_path / "codes.npy", np.full((10, 16), 4096))
    sf.write(tmp_path / "w.wav", np.zeros(SAMPLE_RATE, np.float32), SAMPLE_RATE)
    out = cli("parity", tmp_path / "codes.npy", tmp_path / "w.wav", "--model", tmp_path / "no-model")
    assert out.returncode == 1 and out.stderr.startswith("error: codes.npy holds values 4096..4096")
    np.save(tmp_path / "ok.npy", np.zeros((10, 16), np.int64))
    sf.write(tmp_path / "long.wav", np.zeros(10 * SAMPLE_RATE, np.float32), SAMPLE_RATE)
    out = cli("parity", tmp_path / "ok.npy", tmp_path / "long.wav", "--model", tmp_path / "no-model")
    assert out.returncode == 1 and "it was not made from these codes" in out.stderr


def test_encode_parity_and_precision(cli, tiny_checkpoint, tmp_path):
    x = speechlike(1.5, seed=6)
    sf.write(tmp_path / "clip.wav", x, SAMPLE_RATE, subtype="FLOAT")
    engine = _engine(tiny_checkpoint)
    np.save(tmp_path / "c.npy", engine.encode_array(x).codes)
    out = cli("encode-parity", tmp_path / "clip.wav", tmp_path / "c.npy", "--model", tiny_checkpoint, "--device", "cpu")
    assert out.returncode == 0 and out.stdout.startswith("Their codes equal the reference encode"), out.stderr
    sweep = cli(
        "precision",
        tmp_path / "clip.wav",
        "--model",
        tiny_checkpoint,
        "--device",
        "cpu",
        "--precisions",
        "float32,bfloat16",
    )
    assert sweep.returncode == 0, sweep.stderr
    assert "bf16" in sweep.stdout and "Random weights" in sweep.stdout


def test_parity_of_a_token_file_uses_the_model_it_names(cli, tiny_checkpoint, tmp_path, monkeypatch):
    """A token file names the model that made its codes: ``parity`` decodes with it when no --model is
    given (and says so), and --model still chooses another."""
    from core import tokens

    monkeypatch.delenv("CODEC_MODEL", raising=False)
    engine = _engine(tiny_checkpoint)
    x = speechlike(1.0, seed=5)
    codes = engine.encode_array(x).codes
    path = tokens.save_tokens(tokens.make_token_file(codes, x.size, str(tiny_checkpoint)), tmp_path / "c.npz")
    sf.write(tmp_path / "theirs.wav", engine.decode(codes, x.size).samples, SAMPLE_RATE, subtype="FLOAT")
    out = cli("parity", path, tmp_path / "theirs.wav", "--device", "cpu")
    assert out.returncode == 0, out.stderr
    assert f"model: {tiny_checkpoint}" in out.stderr and out.stdout.startswith("Identical"), out.stdout
    other = cli("parity", path, tmp_path / "theirs.wav", "--device", "cpu", "--model", tmp_path / "none")
    assert other.returncode == 1 and "model:" not in other.stderr.splitlines()[0]
