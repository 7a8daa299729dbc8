"""The public stream decoder (core.model.stream_decoder) on a tiny checkpoint with every transformer
layer scale 1.0 (so the decoder's context matters): whatever the packet sizes, a stream's audio equals
``Engine.decode`` of all its codes at once, with the tail; a reset stream starts afresh; interleaved
streams each get their own audio; the batched step (run eagerly here; its CUDA graphs in
tests/gpu/test_gpu_stream_decode.py) gives the same; bad codes are refused with a sentence."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from core.codec import NUM_CODEBOOKS
from core.errors import LiveBusy, LiveSessionError, TokenFileError
from core.model.engine import Engine
from core.settings import Settings
from tests.conftest import speechlike

pytestmark = pytest.mark.usefixtures("single_thread")  # see tests/conftest.py

MIN_SNR_DB = 80.0


def snr_db(x: np.ndarray, ref: np.ndarray) -> float:
    assert x.shape == ref.shape, (x.shape, ref.shape)
    err = float(np.sum((x.astype(np.float64) - ref) ** 2))
    return float("inf") if err == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err))


def scaled(engine: Engine) -> Engine:
    assert engine.load(), engine.error
    with torch.no_grad():
        scales = [p for name, p in engine.model.named_parameters() if name.endswith("layer_scale.scale")]
        for p in scales:
            p.fill_(1.0)
    assert scales
    return engine


@pytest.fixture(scope="module")
def scaled_engine(tiny_checkpoint):
    engine = scaled(Engine(Settings(model=str(tiny_checkpoint), device="cpu", decode_streams=3)))
    yield engine
    engine.unload()


@pytest.fixture(scope="module")
def clip_codes(scaled_engine):
    """Codes of 6.5 s of speech-like audio (82 frames: past the decoder's 72-frame window)."""
    return scaled_engine.encode_array(speechlike(6.5, seed=3)).codes


@pytest.fixture(scope="module")
def whole(scaled_engine, clip_codes):
    return scaled_engine.decode(clip_codes).samples


def stream_through(decoder, codes: np.ndarray, sizes) -> np.ndarray:
    out, low, i = [], 0, 0
    while low < codes.shape[0]:
        n = sizes[i % len(sizes)]
        audio = decoder.push(codes[low : low + n])
        assert audio.dtype == np.float32 and audio.size == min(n, codes.shape[0] - low) * decoder.samples_per_frame
        out.append(audio)
        low, i = low + n, i + 1
    out.append(decoder.finish())
    return np.concatenate(out)


@pytest.mark.parametrize("sizes", [[1], [3], [4], [7], [10_000], [1, 4, 2, 7, 3, 5]], ids=str)
@pytest.mark.parametrize("pooled", [False, True], ids=["own-step", "batched-step"])
def test_any_packet_sizes_give_the_whole_decode(scaled_engine, clip_codes, whole, sizes, pooled):
    scaled_engine.streams.pooled = pooled
    try:
        with scaled_engine.stream_decoder() as decoder:
            assert (decoder._batcher is not None) == pooled
            assert snr_db(stream_through(decoder, clip_codes, sizes), whole) >= MIN_SNR_DB
    finally:
        scaled_engine.streams.pooled = None


def test_a_stream_can_fail_the_check(scaled_engine, clip_codes, whole):
    """The comparison sees a stream that restarts its state at each packet (what a naive server does)."""
    out = []
    for low in range(0, clip_codes.shape[0], 4):
        with scaled_engine.stream_decoder() as decoder:
            out.append(decoder.push(clip_codes[low : low + 4]))
    assert snr_db(np.concatenate(out), whole) < 40


@pytest.mark.parametrize("pooled", [False, True], ids=["own-step", "batched-step"])
def test_one_frame_stream_and_reset(scaled_engine, clip_codes, pooled):
    scaled_engine.streams.pooled = pooled
    try:
        one = clip_codes[5:6]
        ref_one = scaled_engine.decode(one).samples
        other = clip_codes[::-1][:20].copy()
        ref_other = scaled_engine.decode(other).samples
        with scaled_engine.stream_decoder() as decoder:
            got = decoder.push(one[0])  # a bare (16,) row is one frame
            assert decoder.finish().size == 0
            assert snr_db(got, ref_one) >= MIN_SNR_DB
            with pytest.raises(LiveSessionError, match="reset it"):
                decoder.push(one)
            decoder.reset()
            decoder.push(clip_codes[:30])  # half an utterance, then forgotten
            decoder.reset()
            assert snr_db(stream_through(decoder, other, [3]), ref_other) >= MIN_SNR_DB
    finally:
        scaled_engine.streams.pooled = None


@pytest.mark.parametrize("pooled", [False, True], ids=["own-step", "batched-step"])
def test_interleaved_streams_each_get_their_own_audio(scaled_engine, clip_codes, whole, pooled):
    scaled_engine.streams.pooled = pooled
    if scaled_engine.streams._batcher is not None:  # the eager CPU step's measured cost admits one stream
        scaled_engine.streams._batcher.cost_s.clear()
    other = clip_codes[::-1].copy()
    ref_other = scaled_engine.decode(other).samples
    results: dict[str, np.ndarray] = {}
    try:
        a, b = scaled_engine.stream_decoder(), scaled_engine.stream_decoder()

        def run(name, decoder, codes, sizes):
            results[name] = stream_through(decoder, codes, sizes)

        threads = [
            threading.Thread(target=run, args=("a", a, clip_codes, [4])),
            threading.Thread(target=run, args=("b", b, other, [1, 7])),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        a.close()
        b.close()
    finally:
        scaled_engine.streams.pooled = None
    assert snr_db(results["a"], whole) >= MIN_SNR_DB
    assert snr_db(results["b"], ref_other) >= MIN_SNR_DB


def test_bad_codes_are_refused_and_the_stream_goes_on(scaled_engine, clip_codes, whole):
    with scaled_engine.stream_decoder() as decoder:
        bad = clip_codes[:2].copy()
        bad[1, 3] = 2048
        with pytest.raises(TokenFileError, match="cannot be decoded"):
            decoder.push(bad)
        with pytest.raises(TokenFileError, match="cannot be decoded"):
            decoder.push(np.zeros((2, NUM_CODEBOOKS - 1), np.int64))
        with pytest.raises(TokenFileError, match="cannot be decoded"):
            decoder.push(-np.ones((1, NUM_CODEBOOKS), np.int64))
        assert snr_db(stream_through(decoder, clip_codes, [5]), whole) >= MIN_SNR_DB
    with pytest.raises(LiveSessionError, match="closed"):
        decoder.push(clip_codes[:1])


def test_streams_past_the_limit_are_refused_with_the_count(scaled_engine):
    opened = [scaled_engine.stream_decoder() for _ in range(3)]
    with pytest.raises(LiveBusy, match="3 of 3"):
        scaled_engine.stream_decoder()
    opened[0].close()
    scaled_engine.stream_decoder().close()  # a closed stream's place is free again
    for decoder in opened:
        decoder.close()
    assert scaled_engine.streams.in_use == 0


def test_a_stream_takes_no_more_than_the_duration_limit(tiny_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", max_duration_s=1.0))
    assert engine.load(), engine.error
    try:
        with engine.stream_decoder() as decoder:
            decoder.push(np.zeros((12, NUM_CODEBOOKS), np.int64))
            with pytest.raises(TokenFileError, match="--max-duration"):
                decoder.push(np.zeros((12, NUM_CODEBOOKS), np.int64))
    finally:
        engine.unload()


@pytest.mark.parametrize("pooled", [False, True], ids=["own-step", "batched-step"])
def test_a_48khz_decoder_streams_at_its_own_rate(tiny_checkpoint_48k, pooled):
    """The family's 48 kHz decoder: 3,840 samples a frame, equal to the model's whole-utterance decode."""
    from core.nn.decoding import decode_whole

    engine = scaled(Engine(Settings(model=str(tiny_checkpoint_48k), device="cpu")))
    engine.streams.pooled = pooled
    try:
        codes = np.random.default_rng(9).integers(0, 2048, size=(90, NUM_CODEBOOKS))
        with torch.inference_mode():
            ref = decode_whole(engine.model, torch.from_numpy(codes)).float().numpy()
        with engine.stream_decoder() as decoder:
            assert (decoder.sample_rate, decoder.samples_per_frame) == (48_000, 3840)
            assert snr_db(stream_through(decoder, codes, [4, 1, 7]), ref) >= MIN_SNR_DB
    finally:
        engine.unload()


def test_warm_builds_the_step_and_leaves_no_stream_open(scaled_engine):
    scaled_engine.streams.pooled = True
    try:
        assert scaled_engine.streams.warm() is not None
        assert scaled_engine.streams._batcher is not None and scaled_engine.streams.in_use == 0
    finally:
        scaled_engine.streams.pooled = None
