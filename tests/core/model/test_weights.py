import shutil
import time

import pytest

from core.errors import WeightsError
from core.model.engine import Engine
from core.model.weights import is_hub_id, resolve_source
from core.settings import Settings


def test_hub_ids_and_paths_are_told_apart(tmp_path):
    assert is_hub_id("Qwen/Qwen3-TTS-Tokenizer-12Hz")
    assert not is_hub_id("/models/qwen")
    assert not is_hub_id("./qwen")
    assert not is_hub_id("a/b/c")


def test_unreachable_hub_fails_fast_with_instructions(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # empty cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no hub here; same answer as an unreachable one
    start = time.perf_counter()
    with pytest.raises(WeightsError, match="not in the Hugging Face cache") as info:
        resolve_source("Qwen/Qwen3-TTS-Tokenizer-12Hz")
    assert time.perf_counter() - start < 10
    assert "--model DIR" in str(info.value)


def test_directory_without_weights_is_named(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(WeightsError, match=r"lacks preprocessor_config.json, \*.safetensors"):
        resolve_source(str(tmp_path))


def copy_checkpoint(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_incomplete_checkpoint_fails_instead_of_running_random_layers(tiny_checkpoint, tmp_path):
    from safetensors.torch import load_file, save_file

    ckpt = copy_checkpoint(tiny_checkpoint, tmp_path / "partial")
    tensors = load_file(ckpt / "model.safetensors")
    dropped = next(k for k in tensors if "decoder.pre_conv" in k)
    del tensors[dropped]
    save_file(tensors, ckpt / "model.safetensors", metadata={"format": "pt"})
    engine = Engine(Settings(model=str(ckpt)))
    assert not engine.load()
    assert "incomplete" in engine.error and dropped in engine.error


def test_corrupt_safetensors_fails_with_advice(tiny_checkpoint, tmp_path):
    ckpt = copy_checkpoint(tiny_checkpoint, tmp_path / "corrupt")
    (ckpt / "model.safetensors").write_bytes(b"this is not a safetensors file")
    engine = Engine(Settings(model=str(ckpt)))
    assert not engine.load()
    assert str(ckpt) in engine.error


def test_broken_config_json_is_reported(tiny_checkpoint, tmp_path):
    ckpt = copy_checkpoint(tiny_checkpoint, tmp_path / "badconfig")
    (ckpt / "config.json").write_text("{not json")
    engine = Engine(Settings(model=str(ckpt)))
    assert not engine.load()
    assert "config.json is not valid JSON" in engine.error
