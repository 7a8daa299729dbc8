"""Fixtures of the core tests that call the model's parts directly (encoding, decoding)."""

from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.fixture(scope="session")
def tiny_model(tiny_checkpoint):
    """The tiny checkpoint's ``Qwen3TTSTokenizerV2Model`` on the CPU, loaded the official way."""
    from qwen_tts import Qwen3TTSTokenizer

    return Qwen3TTSTokenizer.from_pretrained(str(tiny_checkpoint), device_map="cpu", dtype=torch.float32).model


def _whole_codes(model, x: np.ndarray) -> torch.Tensor:
    """The official unchunked encode (``model.encode`` on the whole clip)."""
    with torch.inference_mode():
        wav = torch.from_numpy(x)[None]
        return model.encode(wav, torch.ones_like(wav, dtype=torch.long), return_dict=True).audio_codes[0]


@pytest.fixture
def whole_codes():
    """whole_codes(model, x) -> codes (frames, 16) of the official whole-clip encode."""
    return _whole_codes
