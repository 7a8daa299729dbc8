"""Decode streams through the batched CUDA-graph step (core.nn.decode_pool via core.model.stream_batcher)
on the full-size checkpoint, strict fp32 (TF32 off on both sides), every transformer layer scale 1.0:
streams in threads with packets of 1, 4, 7 and mixed sizes, opening at different times, each get audio
equal to the engine's decode of all their codes (≥ 80 dB); a one-frame stream too. Figures are printed.

    CODEC_FULL_CHECKPOINT=/tmp/full python -m pytest -v -s tests/gpu/test_gpu_stream_decode.py
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tests.strict_engine import snr_db, strict_engine

pytestmark = pytest.mark.gpu

MIN_SNR_DB = 80.0
PACKETS = ([1], [4], [7], [1, 4, 2, 7, 3])
FRAMES = (150, 97, 61, 230)


@pytest.fixture(scope="module")
def stream_engine(full_checkpoint):
    with strict_engine(full_checkpoint, device="cuda:0", decode_streams=16) as engine:
        yield engine


def _stream(engine, codes, sizes, delay_s, out, i):
    time.sleep(delay_s)
    with engine.stream_decoder() as decoder:
        assert decoder._batcher is not None  # on a GPU: the batched step
        parts, low, k = [], 0, 0
        while low < codes.shape[0]:
            n = sizes[k % len(sizes)]
            parts.append(decoder.push(codes[low : low + n]))
            low, k = low + n, k + 1
        parts.append(decoder.finish())
    out[i] = np.concatenate(parts)


def test_streams_in_threads_equal_the_whole_decode(stream_engine):
    rng = np.random.default_rng(5)
    clips = [rng.integers(0, 2048, size=(n, 16)) for n in FRAMES]
    refs = [stream_engine.decode(c).samples for c in clips]
    out: list = [None] * len(clips)
    threads = [
        threading.Thread(target=_stream, args=(stream_engine, c, PACKETS[i], 0.05 * i, out, i))
        for i, c in enumerate(clips)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snrs = [snr_db(o, r) for o, r in zip(out, refs, strict=True)]
    print("stream SNR dB against the whole decode:", [round(s, 1) for s in snrs])
    assert min(snrs) >= MIN_SNR_DB
    assert stream_engine.streams._batcher is not None and stream_engine.streams._batcher.steps > 0


def test_a_one_frame_stream_equals_its_decode(stream_engine):
    codes = np.random.default_rng(6).integers(0, 2048, size=(1, 16))
    with stream_engine.stream_decoder() as decoder:
        got = np.concatenate([decoder.push(codes), decoder.finish()])
    assert snr_db(got, stream_engine.decode(codes).samples) >= MIN_SNR_DB
