"""Engine memory behaviour on the tiny checkpoint: chunk plans, pre-flight estimates and refusals,
and out-of-memory retries with smaller chunks.

Out-of-memory errors cannot happen on a CPU, so the retry tests make the model's own convolution
stack (encode) or quantizer (decode) raise ``torch.cuda.OutOfMemoryError`` above a size: the
engine's retry logic, the thing under test, runs unchanged.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest
import torch

from core.errors import OutOfMemory
from core.model import planner
from core.model.engine import Engine
from core.model.planner import MemoryEstimate
from core.nn import decoding, encoding
from core.settings import Settings
from tests.conftest import official_whole_codes

SR = 24_000  # Hz
FRAME = 1920  # samples per code frame


@pytest.fixture
def make_engine(tiny_checkpoint):
    def make(**changes) -> Engine:
        engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", **changes))
        assert engine.load(), engine.error
        return engine

    return make


def whole_codes(engine: Engine, x: np.ndarray) -> np.ndarray:
    return official_whole_codes(engine, x).numpy()


def test_long_clips_are_chunked_and_agree_with_the_whole_encode(make_engine, speech):
    engine = make_engine(encode_chunk_s=1.0, encode_span_s=2.0, decode_chunk_frames=16)
    x = speech(4.37, seed=8)
    result = engine.encode_array(x)
    np.testing.assert_array_equal(result.codes, whole_codes(engine, x))
    decoded = engine.decode(result.codes)
    with torch.inference_mode():
        whole = decoding.decode_whole(engine.model, torch.from_numpy(result.codes)).numpy()
    np.testing.assert_allclose(decoded.samples, whole, atol=1e-4, rtol=0)


def test_estimate_is_a_frozen_record_that_grows_with_length_until_chunked(make_engine):
    engine = make_engine(encode_chunk_s=2.0, decode_chunk_frames=25)
    short, chunk, long = (engine.estimate("encode", s) for s in (1.0, 2.0, 600.0))
    assert isinstance(short, MemoryEstimate) and short.fits and "fits" in short.message
    with pytest.raises(dataclasses.FrozenInstanceError):
        short.fits = False
    assert short.peak_mib < chunk.peak_mib  # the whole-clip path grows with the clip
    weights = sum(t.numel() * t.element_size() for t in list(engine.model.parameters()) + list(engine.model.buffers()))
    assert short.peak_mib >= weights / 2**20
    decode_a, decode_b = engine.estimate("decode", frames=25), engine.estimate("decode", frames=25_000)
    # decode activations are bounded by the chunk; on the CPU the estimate also holds the decoded float32
    # audio itself (host RAM, issue 8), which is what grows with the clip
    output_growth_mib = planner.output_bytes("decode", [25_000 * 1920]) - planner.output_bytes("decode", [25 * 1920])
    assert decode_b.peak_mib - decode_a.peak_mib == pytest.approx(output_growth_mib / 2**20, abs=0.2)
    trip = engine.estimate("roundtrip", 600.0)
    assert trip.peak_mib >= max(long.peak_mib, engine.estimate("decode", 600.0).peak_mib)  # both halves of the trip
    assert engine.estimate("encode", samples=48_000).peak_mib == chunk.peak_mib
    with pytest.raises(ValueError):
        engine.estimate("transcode", 1.0)


def test_jobs_that_cannot_fit_are_refused_before_they_start(make_engine, speech):
    engine = make_engine(max_batch_memory_fraction=1e-9)  # allow almost none of the free RAM
    estimate = engine.estimate("encode", 2.0)
    assert not estimate.fits and "does not fit" in estimate.message
    calls = []
    real = engine.model.encode
    engine.model.encode = lambda *a, **k: calls.append(1) or real(*a, **k)
    with pytest.raises(OutOfMemory, match="does not fit"):
        engine.encode_array(speech(2.0))
    assert calls == []  # refused before any model work
    assert engine.ready


def fail_above(module, attribute: str, limit: int, size_of):
    """Make ``module.attribute`` raise a CUDA out-of-memory error when its input exceeds ``limit``."""
    real = getattr(module, attribute)

    def call(x, *args, **kwargs):
        if size_of(x) > limit:
            raise torch.cuda.OutOfMemoryError(f"CUDA out of memory (injected: size {size_of(x)} > {limit})")
        return real(x, *args, **kwargs)

    setattr(module, attribute, call)


def test_encode_retries_with_smaller_chunks_then_fails_clearly_then_recovers(make_engine, speech, caplog):
    engine = make_engine(encode_chunk_s=8.0, min_chunk_s=1.0)
    context = encoding.conv_context_samples(engine.model)
    x, small = speech(9.0, seed=3), speech(0.2)
    expected, expected_small = whole_codes(engine, x), whole_codes(engine, small)
    # windows of 8 s and 4 s "run out of memory"; 2 s windows (plus context) fit
    fail_above(engine.model.encoder.encoder, "forward", 2 * SR + context, lambda x: x.shape[-1])
    with caplog.at_level(logging.WARNING, logger="core.model.engine"):
        result = engine.encode_array(x)
    np.testing.assert_array_equal(result.codes, expected)
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2

    fail_above(engine.model.encoder.encoder, "forward", SR // 2, lambda x: x.shape[-1])  # below the 1 s floor
    with pytest.raises(OutOfMemory, match="smallest chunks") as failure:
        engine.encode_array(x)
    assert "min_chunk_s=1" in str(failure.value) and "Clear VRAM" in str(failure.value)
    assert engine.ready
    np.testing.assert_array_equal(engine.encode_array(small).codes, expected_small)  # the next request succeeds


def test_decode_retries_with_smaller_chunks(make_engine, speech, caplog):
    engine = make_engine(decode_chunk_frames=40, min_chunk_s=1.0)  # floor: 13 frames
    codes = whole_codes(engine, speech(5.0, seed=6))
    with torch.inference_mode():
        whole = decoding.decode_whole(engine.model, torch.from_numpy(codes)).numpy()
    fail_above(engine.model.decoder.quantizer, "decode", 15, lambda c: c.shape[-1])
    with caplog.at_level(logging.WARNING, logger="core.model.engine"):
        decoded = engine.decode(codes)
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2  # 40 -> 20 -> 13 frames
    np.testing.assert_allclose(decoded.samples, whole, atol=1e-4, rtol=0)
    fail_above(engine.model.decoder.quantizer, "decode", 5, lambda c: c.shape[-1])
    with pytest.raises(OutOfMemory, match="smallest chunks"):
        engine.decode(codes)


def test_batches_group_short_clips_and_chunk_long_ones(make_engine, speech):
    from core.audio.files import audio_from_array

    engine = make_engine(encode_chunk_s=1.0, batch_audio_s=2.0, decode_chunk_frames=20)
    arrays = [speech(s, seed=i) for i, s in enumerate((0.5, 2.6, 0.7, 0.9, 0.3))]
    results = engine.encode_batch([audio_from_array(a, SR) for a in arrays])
    for a, r in zip(arrays, results, strict=True):
        single = whole_codes(engine, a)
        assert r.codes.shape == single.shape
        np.testing.assert_array_equal(r.codes[:-1], single[:-1])  # a padded clip's last frame may differ
    np.testing.assert_array_equal(results[1].codes, whole_codes(engine, arrays[1]))  # chunked alone: exact
    decoded = engine.decode_batch([r.codes for r in results])
    for r, d in zip(results, decoded, strict=True):
        # batched vs lone decode: other conv shapes, so fp32 rounding differs (1.1e-5 seen on an AMX CPU)
        np.testing.assert_allclose(d.samples, engine.decode(r.codes).samples, atol=1e-4, rtol=0)
