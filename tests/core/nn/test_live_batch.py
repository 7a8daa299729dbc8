"""The batched live step (core.nn.live_batch, core.model.live_batcher) run eagerly on the CPU, on a tiny
checkpoint with every transformer layer scale 1.0 (so context matters): sessions of different lengths
that join at different times each get their clip's offline codes and audio, a row's results do not
depend on what the other rows hold, and a reused slot starts afresh. The CUDA graphs of the same step
are checked in tests/gpu/test_gpu_live_batch.py."""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest
import torch

from core.codec import SAMPLES_PER_FRAME
from core.model.engine import Engine
from core.nn import frame_conv
from core.nn.encoding import conv_context_samples
from core.nn.live_batch import LiveBatch, Row
from core.settings import Settings
from tests.conftest import speechlike

pytestmark = pytest.mark.usefixtures("single_thread")  # see tests/conftest.py

SECONDS = (2.3, 3.1, 1.7)  # partial last frames of different lengths
JOIN_AT = (0, 5, 11)  # the step at which each session opens


@pytest.fixture(scope="module")
def scaled_engine(tiny_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", live_sessions=4))
    assert engine.load(), engine.error
    with torch.no_grad():
        scales = [p for name, p in engine.model.named_parameters() if name.endswith("layer_scale.scale")]
        for p in scales:
            p.fill_(1.0)
    assert scales
    yield engine
    engine.unload()


@pytest.fixture(scope="module")
def clips(scaled_engine):
    xs = [speechlike(s, seed=10 + i) for i, s in enumerate(SECONDS)]
    codes = [scaled_engine.encode_array(x).codes for x in xs]
    audio = [scaled_engine.decode(c, original_samples=x.size).samples for c, x in zip(codes, xs, strict=True)]
    return xs, codes, audio


def _snr_db(x, ref) -> float:
    err = float(np.sum((x.astype(np.float64) - ref) ** 2))
    return float("inf") if err == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err))


def _batch(engine, slots=4) -> LiveBatch:
    steps = 2 * int(max(SECONDS) * 12.5) + 8
    return LiveBatch(engine.model, engine._fast.decoder, slots, steps, lambda op: contextlib.nullcontext(), False)


def _drive(batch: LiveBatch, model, xs, join_at):
    """Each clip through the batch, one frame per session per step, sessions opening at ``join_at``."""
    context = conv_context_samples(model)
    slots: list[int | None] = [None] * len(xs)
    done = [False] * len(xs)
    frames = [0] * len(xs)
    codes: list[list[np.ndarray]] = [[] for _ in xs]
    audio: list[list[np.ndarray]] = [[] for _ in xs]
    sizes, step = [], 0
    while not all(done):
        rows, who = [], []
        for i, x in enumerate(xs):
            if step < join_at[i] or done[i]:
                continue
            if slots[i] is None:
                slots[i] = batch.open()
            slot, start = slots[i], frames[i] * SAMPLES_PER_FRAME
            assert slot is not None
            if start + SAMPLES_PER_FRAME <= x.size:
                rows.append(Row(slot, samples=x[start : start + SAMPLES_PER_FRAME]))
            else:  # the padded last frame: eagerly encoded, decoded as a row
                low = max(0, start - context)
                rows.append(Row(slot, codes=batch.last_frame(slot, x[low:], start - low, frames[i] == 0)))
                done[i] = True
                batch.close(slot)
            frames[i] += 1
            who.append(i)
        if rows:
            sizes.append(len(rows))
            c, a = batch.step(rows)
            for k, i in enumerate(who):
                codes[i].append(c[k])
                audio[i].append(a[k])
        step += 1
    return [np.stack(c) for c in codes], [np.concatenate(a) for a in audio], sizes


def test_sessions_joining_at_different_times_get_their_offline_codes_and_audio(scaled_engine, clips):
    xs, ref_codes, ref_audio = clips
    with torch.inference_mode():
        codes, audio, sizes = _drive(_batch(scaled_engine), scaled_engine.model, xs, JOIN_AT)
    assert max(sizes) == 3 and min(sizes) == 1  # steps of one, two and three sessions
    for x, got, want, wav, ref in zip(xs, codes, ref_codes, audio, ref_audio, strict=True):
        np.testing.assert_array_equal(got, want)
        assert _snr_db(wav[: x.size], ref) > 80  # fp32 rounding (masked keys, per-slot state)


def test_a_row_does_not_depend_on_the_other_rows(scaled_engine, clips):
    xs = clips[0]
    frame = xs[0][:SAMPLES_PER_FRAME]
    outputs = []
    with torch.inference_mode():
        for seed in (0, 1):
            batch = _batch(scaled_engine)
            rng = np.random.default_rng(seed)
            slots = [batch.open() for _ in range(3)]
            for _ in range(3):  # three steps, the other rows' audio differs from run to run
                others = [
                    Row(s, samples=rng.standard_normal(SAMPLES_PER_FRAME).astype(np.float32) * 0.3) for s in slots[1:]
                ]
                codes, audio = batch.step([Row(slots[0], samples=frame), *others])
            outputs.append((codes[0], audio[0]))
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    np.testing.assert_array_equal(outputs[0][1], outputs[1][1])


def test_a_reused_slot_starts_afresh(scaled_engine, clips):
    xs = clips[0]
    with torch.inference_mode():
        batch = _batch(scaled_engine, slots=1)
        first, _, _ = _drive(batch, scaled_engine.model, [xs[2]], [0])
        again, _, _ = _drive(batch, scaled_engine.model, [xs[2]], [0])  # the same slot, closed and reopened
    np.testing.assert_array_equal(first[0], again[0])


def test_live_sessions_in_threads_share_the_batched_step(scaled_engine, clips):
    xs, ref_codes, ref_audio = clips
    live = scaled_engine.live
    live.batched = True
    results: list = [None] * len(xs)
    errors: list = []

    def run(i: int, session) -> None:
        try:
            with session:
                for start in range(0, xs[i].size, 1500):
                    session.push(xs[i][start : start + 1500])
                results[i] = session.finish()
        except Exception as e:  # reported below
            errors.append(e)

    try:
        sessions = [live.open(24_000, paced=False) for _ in xs]  # before a step is measured: the cap admits
        threads = [threading.Thread(target=run, args=(i, s)) for i, s in enumerate(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        batcher = live._batcher
        assert batcher is not None and batcher.batch.in_use == 0  # every slot given back
        frames = sum(r.codes.shape[0] for r in results)
        assert batcher.steps < frames  # some steps carried more than one session's frame
        for r, want, ref in zip(results, ref_codes, ref_audio, strict=True):
            np.testing.assert_array_equal(r.codes, want)
            assert _snr_db(r.reconstruction, ref) > 80
        assert live.capacity() >= 1
    finally:
        live.batched = None
        live.close_all()


@pytest.mark.parametrize(
    ("c_in", "c_out", "kernel", "stride", "steps", "batch"),
    [(8, 5, 16, 8, 4, 1), (6, 7, 10, 5, 3, 2), (4, 4, 2, 2, 2, 3), (3, 2, 7, 3, 5, 2)],
)
def test_a_transposed_convolution_as_one_matmul_is_the_modules_output(c_in, c_out, kernel, stride, steps, batch):
    torch.manual_seed(0)
    conv = torch.nn.ConvTranspose1d(c_in, c_out, kernel, stride=stride).double()
    overlap = -(-kernel // stride) - 1  # previous input steps, as the streamed decoder keeps them
    x = torch.randn(batch, c_in, overlap + steps, dtype=torch.double)
    prepared = frame_conv.transposed_weight(conv)
    assert prepared is not None
    got = frame_conv.conv_transpose1d(conv, x, prepared)
    assert got is not None
    want = conv(x)[..., overlap * stride : (overlap + steps) * stride]
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_every_convolution_as_a_matmul_still_gives_the_offline_codes_and_audio(scaled_engine, clips, monkeypatch):
    monkeypatch.setattr(frame_conv, "MATMUL_MAX_ROWS", 1 << 30)  # every row count takes the matmuls
    xs, ref_codes, ref_audio = clips
    with torch.inference_mode():
        codes, audio, _ = _drive(_batch(scaled_engine), scaled_engine.model, xs, JOIN_AT)
    for x, got, want, wav, ref in zip(xs, codes, ref_codes, audio, ref_audio, strict=True):
        np.testing.assert_array_equal(got, want)
        assert _snr_db(wav[: x.size], ref) > 80
