"""The batched live step as CUDA graphs (core.nn.live_batch through core.model.live_batcher) on the
full-size checkpoint, strict fp32 (TF32 off on both sides), every transformer layer scale 1.0:
sessions of different lengths in threads, joining at different times, each get the engine's codes,
and audio equal to the engine's decode up to fp32 rounding; a row's results do not depend on the
other rows of its graph. Figures are printed.

    CODEC_FULL_CHECKPOINT=/tmp/full python -m pytest -v -s tests/gpu/test_gpu_live_batch.py
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.nn.live_batch import Row
from tests.strict_engine import snr_db, strict_engine

pytestmark = pytest.mark.gpu

SECONDS = (6.3, 4.1, 7.7, 2.25)
JOIN_AFTER_S = (0.0, 0.5, 1.1, 2.0)


@pytest.fixture(scope="module")
def batch_engine(full_checkpoint):
    with strict_engine(full_checkpoint, device="cuda:0", live_sessions=8, live_max_s=60) as engine:
        yield engine


def test_sessions_in_threads_get_the_engines_codes_through_the_graphs(batch_engine, speech):
    engine = batch_engine
    assert engine.live.use_batch()  # on a GPU with graphs: the batched step
    xs = [speech(s, seed=20 + i) for i, s in enumerate(SECONDS)]
    results: list = [None] * len(xs)
    errors: list = []

    def run(i: int) -> None:
        try:
            time.sleep(JOIN_AFTER_S[i])
            with engine.live.open(SAMPLE_RATE, paced=False) as session:
                for start in range(0, xs[i].size, 1700):
                    session.push(xs[i][start : start + 1700])
                    time.sleep(0.005)
                results[i] = session.finish()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not errors, errors
    batcher = engine.live._batcher
    assert batcher is not None and batcher.batch.capture
    frames = sum(r.codes.shape[0] for r in results)
    print(
        f"\n{frames} frames in {batcher.steps} batched steps; step cost by rows (ms): "
        + ", ".join(f"{b}: {1000 * c:.2f}" for b, c in sorted(batcher.cost_s.items()))
    )
    assert batcher.steps < frames
    for x, r in zip(xs, results, strict=True):
        codes = engine.encode_array(x).codes
        audio = engine.decode(codes, original_samples=x.size).samples
        snr = snr_db(r.reconstruction, audio)
        print(
            f"{x.size / SAMPLE_RATE:.2f} s: codes agree {float((r.codes == codes).mean()):.4%}, audio SNR {snr:.1f} dB, "
            f"frame compute p95 {r.stats['compute_ms_p95']:.1f} ms"
        )
        np.testing.assert_array_equal(r.codes, codes)
        assert snr > 60  # fp32 rounding of a different convolution and matmul order


def test_a_row_does_not_depend_on_the_other_rows_of_its_graph(batch_engine, speech):
    engine = batch_engine
    with engine.model_work("encode") as (model, runner):
        batch = engine.live.batcher(model, runner).batch
    frame = speech(0.5, seed=3)[:SAMPLES_PER_FRAME]
    outputs = []
    with torch.inference_mode():
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            slots = [batch.open() for _ in range(5)]  # bucket 8: three padding rows
            for _ in range(3):
                others = [
                    Row(s, samples=(rng.standard_normal(SAMPLES_PER_FRAME) * 0.3).astype(np.float32)) for s in slots[1:]
                ]
                codes, audio = batch.step([Row(slots[0], samples=frame), *others])
            outputs.append((codes[0], audio[0]))
            for s in slots:
                batch.close(s)
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    np.testing.assert_array_equal(outputs[0][1], outputs[1][1])
