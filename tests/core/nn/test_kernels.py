"""core/nn/kernels.py: SnakeBeta off the GPU is the module's own arithmetic, bit for bit, in every layout."""

from __future__ import annotations

import pytest
import torch

from core.nn import conv_layout, kernels


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["channels-first", "channels-last"])
def test_snake_in_place_is_bit_identical_to_the_module(dtype, layout):
    from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import SnakeBeta

    torch.manual_seed(0)
    module = SnakeBeta(24).to(dtype)
    with torch.no_grad():
        module.alpha.normal_()
        module.beta.normal_()
    x = torch.randn(2, 24, 500, dtype=dtype) * 3
    if layout == "channels-last":
        x = conv_layout.channels_last(x)
    kept = x.clone()
    with torch.inference_mode():
        ours = kernels.snake_beta(module, x)
        theirs = module(x)
    assert torch.equal(ours, theirs)
    assert torch.equal(x, kept)  # the input is not written to
    assert ours.stride() == x.stride()
