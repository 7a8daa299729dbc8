"""The bf16 guard on the full-size checkpoint on a GPU (core.nn.fast_decode)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.model.engine import Engine
from core.settings import Settings

pytestmark = pytest.mark.gpu


def test_bf16_decode_of_the_full_model_is_guarded(full_checkpoint, speech):
    engine = Engine(Settings(model=str(full_checkpoint), device="cuda:0", decode_dtype="bfloat16"))
    assert engine.load(), engine.error
    codes = engine.encode_array(speech(30.0)).codes
    fast = engine._fast
    plain = engine.decode(codes)
    assert plain.warnings == ()  # the random full model's bf16 decode is not broken
    engine._fast = None
    try:
        engine._fast = type(fast)(engine.model.decoder, type(fast.options)("float32"))
        ref = engine.decode(codes).samples
    finally:
        engine._fast = fast
    err = plain.samples.astype(np.float64) - ref
    assert 10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / np.sum(err**2)) > 15
    with torch.no_grad():
        fast.decoder.decoder[-1].conv.weight.mul_(1e4)
    broken = engine.decode(codes)
    assert broken.warnings and "float32" in broken.warnings[0]
    assert np.mean(np.abs(broken.samples) >= 0.999) < 0.5


def test_channels_last_decode_of_the_full_model_equals_channels_first(full_checkpoint, speech):
    """Both layouts in strict fp32 (TF32 off on both sides): the same decode up to fp32 rounding."""
    from core.nn import fast_decode

    engine = Engine(Settings(model=str(full_checkpoint), device="cuda:0"))
    assert engine.load(), engine.error
    codes = engine.encode_array(speech(30.0)).codes
    outs = {}
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        for layout in (False, True):
            options = fast_decode.DecodeOptions("float32", channels_last=layout)
            engine._fast = fast_decode.FastDecoder(engine.model.decoder, options)
            outs[layout] = engine.decode(codes).samples
    finally:
        torch.backends.cudnn.allow_tf32 = previous
    first, last = outs[False].astype(np.float64), outs[True].astype(np.float64)
    snr = 10 * np.log10(np.sum(first**2) / max(np.sum((last - first) ** 2), 1e-30))
    print(f"\nchannels-last vs channels-first decode, 30 s, strict fp32: {snr:.1f} dB")
    assert snr > 80
