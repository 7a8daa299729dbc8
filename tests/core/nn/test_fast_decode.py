"""The decoder the engine decodes with (core.nn.fast_decode): the bf16 guard and the compiled stack.

The guard test breaks the bf16 copy of the decoder on purpose (its last convolution's weights
scaled by 1e4, so every bf16 chunk comes out at full scale) and checks that every chunk is redone
in fp32, that the audio is then the fp32 decode's, and that the warning reaches the result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.model.engine import Engine
from core.nn import decoding, encoding, fast_decode
from core.settings import Settings

CHUNK_FRAMES = 7  # small chunks: a 3 s clip (38 frames) spans six of them


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model


@pytest.fixture(scope="module")
def codes(model):
    from tests.conftest import speechlike

    with torch.inference_mode():
        return encoding.encode(model, torch.from_numpy(speechlike(3.0, seed=3)), None)


def snr_db(x: torch.Tensor, ref: torch.Tensor) -> float:
    err = float(((x.double() - ref.double()) ** 2).sum())
    return math.inf if err == 0 else 10 * math.log10(float((ref.double() ** 2).sum()) / err)


def break_decoder(decoder) -> None:
    """Scale the last convolution so that every output sample is at full scale."""
    with torch.no_grad():
        decoder.decoder[-1].conv.weight.mul_(1e4)


def test_bf16_decode_is_close_to_fp32_and_nothing_is_redone(model, codes):
    fast = fast_decode.FastDecoder(model.decoder, fast_decode.DecodeOptions("bfloat16"))
    assert next(fast.decoder.parameters()).dtype == torch.bfloat16
    assert next(model.decoder.parameters()).dtype == torch.float32  # the model's own decoder is untouched
    with torch.inference_mode():
        ref = decoding.decode(model, codes, CHUNK_FRAMES)
        ours = decoding.decode(model, codes, CHUNK_FRAMES, runner=fast)
    assert fast.take_redone() == 0
    assert ours.dtype == torch.float32 and ours.shape == ref.shape
    assert 15 < snr_db(ours, ref) < 80  # bf16 rounding: close, yet not the fp32 result


def test_broken_bf16_chunks_are_redone_in_fp32(model, codes, caplog):
    fast = fast_decode.FastDecoder(model.decoder, fast_decode.DecodeOptions("bfloat16"))
    break_decoder(fast.decoder)
    with torch.inference_mode():
        ref = decoding.decode(model, codes, CHUNK_FRAMES)
        unguarded = decoding.decode_batch(model, [codes], CHUNK_FRAMES)[0]
        raw = fast.stream(1).step(codes[:CHUNK_FRAMES].T[None])  # what the broken copy gives
        ours = decoding.decode(model, codes, CHUNK_FRAMES, runner=fast)
    assert fast_decode.broken(raw) is not None
    assert fast.take_redone() == -(-codes.shape[0] // CHUNK_FRAMES)  # every chunk
    assert "redone in fp32" in caplog.text
    assert fast_decode.broken(ours) is None
    assert snr_db(ours, ref) > 30  # the fp32 decode, from states carried through bf16
    assert torch.equal(unguarded, ref)  # the model's own decoder was not broken


def test_broken_chunks_warn_in_the_engine_result(tiny_checkpoint, speech):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", decode_dtype="bfloat16"))
    assert engine.load(), engine.error
    assert engine.info()["decode_dtype"] == "bfloat16"
    codes = engine.encode_array(speech(2.0)).codes
    assert engine.decode(codes).warnings == ()
    break_decoder(engine._fast.decoder)
    result = engine.decode(codes)
    assert len(result.warnings) == 1 and "decoded again in float32" in result.warnings[0]
    assert np.isfinite(result.samples).all() and np.mean(np.abs(result.samples) >= 0.999) < 0.5
    assert engine.decode_batch([codes, codes[:5]])[0].warnings == result.warnings


def test_broken_detects_non_finite_and_full_scale_output():
    quiet = torch.linspace(-0.5, 0.5, 1000)
    assert fast_decode.broken(quiet) is None
    assert fast_decode.broken(torch.where(quiet > 0.4, float("nan"), quiet)) == "non-finite samples"
    assert "full scale" in fast_decode.broken(torch.sign(quiet))
    assert fast_decode.broken(torch.sign(quiet).to(torch.bfloat16)) is not None


@pytest.mark.slow
def test_compiled_decoder_matches_eager_and_pads_the_last_chunk(model, codes):
    chunk = 8  # 38 frames: four full chunks and a last one of 6 frames, padded to 8
    fast = fast_decode.FastDecoder(model.decoder, fast_decode.DecodeOptions("float32", compile=True))
    plain = fast_decode.FastDecoder(model.decoder, fast_decode.DecodeOptions("float32"))  # same layout, eager
    with torch.inference_mode():
        ref = decoding.decode(model, codes, chunk, runner=plain)
        eager = decoding.decode(model, codes, chunk, runner=fast)  # not warmed yet: eager
        assert torch.equal(eager, ref)
        fast.warm([(1, chunk)])
        ours = decoding.decode(model, codes, chunk, runner=fast)
    assert fast.warm_shapes == {(1, chunk)} and codes.shape[0] % chunk * 2 >= chunk
    assert ours.shape == ref.shape
    assert torch.allclose(ours, ref, atol=1e-4), (ours - ref).abs().max()
