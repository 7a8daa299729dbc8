"""The decoder family: the 48 kHz recipe, the rate read from a checkpoint, and configs refused with a sentence."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core.codec import BASE_OUTPUT, OutputRate
from core.errors import WeightsError
from core.model.checkpoints import full_config, tiny_config
from core.model.family import decoder_config_for_rate, decoder_samples_per_frame, family_problem, output_rate_of


def test_the_48k_recipe_appends_one_x2_block_and_leaves_the_encoder():
    base = full_config()
    config = decoder_config_for_rate(base, 48_000)
    assert list(config.decoder_config.upsample_rates) == [8, 5, 4, 3, 2]
    assert (config.output_sample_rate, config.decode_upsample_rate) == (48_000, 3840)
    assert decoder_samples_per_frame(config.decoder_config) == 3840
    assert config.encoder_config.to_dict() == base.encoder_config.to_dict()
    assert list(base.decoder_config.upsample_rates) == [8, 5, 4, 3]  # the base is not changed
    assert family_problem(config) is None and family_problem(base) is None


@pytest.mark.parametrize("rate", [44_100, 16_000, 0, -48_000])
def test_rates_the_recipe_cannot_make_are_refused(rate):
    with pytest.raises(ValueError, match="multiple of 24000"):
        decoder_config_for_rate(tiny_config(), rate)


def test_the_48k_checkpoint_loads_with_the_official_class_and_decodes_3840_a_frame(tiny_checkpoint_48k):
    from qwen_tts import Qwen3TTSTokenizer

    raw = json.loads((tiny_checkpoint_48k / "config.json").read_text())
    assert raw["output_sample_rate"] == 48_000 and raw["decode_upsample_rate"] == 3840
    tok = Qwen3TTSTokenizer.from_pretrained(str(tiny_checkpoint_48k), device_map="cpu", dtype=torch.float32)
    assert output_rate_of(tok.model) == OutputRate(48_000, 3840)
    codes = torch.zeros(1, 5, 16, dtype=torch.long)
    wavs, rate = tok.decode({"audio_codes": codes})
    assert rate == 48_000 and np.asarray(wavs[0]).size == 5 * 3840


def test_the_base_checkpoint_reads_24k(tiny_model):
    assert output_rate_of(tiny_model) == BASE_OUTPUT == OutputRate(24_000, 1920)


class _Model:
    """A config and a decoder as a loaded model has them (the checks read nothing else)."""

    def __init__(self, config, total_upsample=None):
        self.config = config
        self.decoder = type("Decoder", (), {"total_upsample": total_upsample or config.decode_upsample_rate})()


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda c: setattr(c, "decode_upsample_rate", 1920), "decode_upsample_rate 1920, but"),
        (lambda c: setattr(c, "output_sample_rate", 44_100), "output_sample_rate 44100 Hz"),
        (lambda c: setattr(c, "input_sample_rate", 16_000), "encoder reads 16000 Hz"),
        (lambda c: setattr(c.decoder_config, "num_quantizers", 8), "8 codebooks"),
    ],
)
def test_a_config_the_workbench_cannot_handle_fails_with_a_sentence(edit, words):
    config = decoder_config_for_rate(tiny_config(), 48_000)
    edit(config)
    with pytest.raises(WeightsError, match="cannot be used here") as caught:
        output_rate_of(_Model(config))
    assert words in str(caught.value)


def test_a_decoder_that_disagrees_with_its_config_is_refused():
    config = decoder_config_for_rate(tiny_config(), 48_000)
    with pytest.raises(WeightsError, match="makes 1920 samples a frame"):
        output_rate_of(_Model(config, total_upsample=1920))


def test_other_decoders_of_the_family_that_agree_with_their_config_are_read():
    config = tiny_config()
    config.decoder_config.upsample_rates = [8, 5, 4, 2]  # 1,280 samples a frame: 16 kHz
    config.decode_upsample_rate, config.output_sample_rate = 1280, 16_000
    assert output_rate_of(_Model(config)) == OutputRate(16_000, 1280)
