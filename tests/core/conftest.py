"""Fixtures of the core tests that call the model's parts directly (encoding, decoding)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def tiny_model(tiny_checkpoint):
    """The tiny checkpoint's ``Qwen3TTSTokenizerV2Model`` on the CPU, loaded the official way."""
    from qwen_tts import Qwen3TTSTokenizer

    return Qwen3TTSTokenizer.from_pretrained(str(tiny_checkpoint), device_map="cpu", dtype=torch.float32).model
