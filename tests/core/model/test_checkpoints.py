import json

import numpy as np
import torch

from core.model.checkpoints import PREPROCESSOR_CONFIG, build_model, full_config, tiny_config
from core.model.engine import Engine
from core.settings import Settings


def test_tiny_checkpoint_loads_through_from_pretrained(tiny_checkpoint):
    assert json.loads((tiny_checkpoint / "preprocessor_config.json").read_text()) == PREPROCESSOR_CONFIG
    engine = Engine(Settings(model=str(tiny_checkpoint)))
    assert engine.load(), engine.error
    assert engine.model.get_model_type() == "qwen3_tts_tokenizer_12hz"


def test_tiny_weights_are_not_degenerate(tiny_checkpoint, speech):
    engine = Engine(Settings(model=str(tiny_checkpoint)))
    engine.load()
    codes = engine.encode_array(speech(3.0)).codes
    assert len(np.unique(codes)) > 50  # codes vary over entries
    assert all(len(np.unique(codes[:, q])) > 3 for q in range(16))  # in every codebook
    audio = engine.decode(codes).samples
    rms = float(np.sqrt(np.mean(audio**2)))
    assert rms > 0.01  # decoded audio is not silent


def test_tiny_layer_scales_make_context_matter():
    model = build_model(tiny_config(), layer_scale=1.0)
    scales = [p for n, p in model.named_parameters() if n.endswith("layer_scale.scale")]
    assert scales and all(torch.all(s == 1.0) for s in scales)


def test_full_config_matches_the_published_size():
    config = full_config()
    assert config.encoder_config.codebook_size == 2048
    assert config.decoder_config.num_quantizers == 16
    with torch.device("meta"):
        from qwen_tts.core import Qwen3TTSTokenizerV2Model

        model = Qwen3TTSTokenizerV2Model(config)
    params = sum(p.numel() for p in model.parameters())
    assert params == 153_714_657  # NOTES.md: published parameter count


def test_random_checkpoints_are_marked_and_reported(tiny_engine, tmp_path):
    assert tiny_engine.info()["random_weights"] is True
    import shutil

    plain = tmp_path / "plain"
    shutil.copytree(tiny_engine.model_path, plain)
    (plain / "codec_workbench_checkpoint.json").unlink()  # as a downloaded checkpoint would be
    engine = Engine(Settings(model=str(plain)))
    assert engine.load()
    assert engine.info()["random_weights"] is False
