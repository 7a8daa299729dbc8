"""The captured live step's code (core.nn.live_graphs), run eagerly on the CPU: the static-buffer
encoder step gives the offline encode's codes, and the static-buffer decoder stream the ordinary
stream's audio (the CUDA capture itself is checked in tests/gpu/test_gpu_live.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.codec import SAMPLES_PER_FRAME, SAMPLES_PER_STEP
from core.nn.decoding import DecoderStream
from core.nn.encoding import EncoderState
from core.nn.live_graphs import DecoderGraph, EncoderGraph

pytestmark = pytest.mark.usefixtures("single_thread")  # see tests/conftest.py


@pytest.mark.parametrize("leftovers", [0.0, float("nan")], ids=["zeroed", "nan"])
def test_the_static_encoder_step_gives_the_offline_codes(tiny_engine, speech, monkeypatch, leftovers):
    from core.nn import live_graphs

    monkeypatch.setattr(live_graphs, "KEY_BUCKET_STEPS", 16)  # the keys it attends over grow bucket by bucket
    x = speech(2.4, seed=1)
    model = tiny_engine.model
    expected = tiny_engine.encode_array(x).codes
    frames = x.size // SAMPLES_PER_FRAME
    with torch.inference_mode():
        state = EncoderState(model, x.size // SAMPLES_PER_STEP + 4, None)
        for layer in (*state.kv.k, *state.kv.v):  # the key store is torch.empty: whatever the allocator had
            layer.fill_(leftovers)  # (NaN after other tests in a whole run: 13 of 30 frames' codes were 0)
        step = EncoderGraph(state, capture=False)
        out, static = [], 0
        for f in range(frames):
            start = f * SAMPLES_PER_FRAME
            low = max(0, start - state.context)
            window = torch.from_numpy(x[low : start + SAMPLES_PER_FRAME])
            if start >= state.context:
                out.append(step.encode(window, start // SAMPLES_PER_STEP).clone())
                static += 1
            else:  # the first frames run eagerly, on the same keys/values
                out.append(state.frames(state.conv_steps(window, start - low), start // SAMPLES_PER_STEP)[:1])
    assert static >= frames - 4
    np.testing.assert_array_equal(torch.cat(out).numpy(), expected[:frames])


def test_the_static_decoder_stream_gives_the_streams_audio(tiny_engine, speech):
    model = tiny_engine.model
    codes = tiny_engine.encode_array(speech(8.0, seed=2)).codes  # 100 frames: past the 72-frame window
    with torch.inference_mode():
        static, ordinary = DecoderGraph(model.decoder, capture=False), DecoderStream(model.decoder, 1)
        a = torch.cat([static.decode(torch.from_numpy(c)).clone() for c in codes], dim=-1)
        b = torch.cat([ordinary.step(torch.from_numpy(c).view(1, -1, 1))[:, 0] for c in codes], dim=-1)
        static.reset()
        again = torch.cat([static.decode(torch.from_numpy(c)).clone() for c in codes[:5]], dim=-1)
    err = float(((a - b) ** 2).sum() / (b**2).sum())
    assert 10 * np.log10(1 / max(err, 1e-30)) > 80  # fp32 rounding (masked keys, in-place state)
    np.testing.assert_array_equal(again.numpy(), a[:, : again.shape[-1]].numpy())  # reset starts afresh
