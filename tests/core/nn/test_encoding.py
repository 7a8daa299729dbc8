"""core/nn/encoding.py: the chunked encode against the official whole-clip encode, on the tiny checkpoint.

The tiny checkpoint's transformer layer scales are 1.0, so context changes codes: encoding each
chunk on its own agrees with the whole clip on only ~85% of codes here. Chunk sizes are small so
every clip spans several windows, spans and key/value blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.codec import SAMPLE_RATE as SR
from core.codec import SAMPLES_PER_FRAME as FRAME
from core.codec import num_frames
from core.model.planner import ModelDims
from core.nn import encoding

CHUNK = SR  # 1 s encode windows in these tests


def chunked_codes(model, x: np.ndarray, **kwargs) -> torch.Tensor:
    with torch.inference_mode():
        return encoding.encode(model, torch.from_numpy(x), CHUNK, **kwargs)


@pytest.mark.parametrize("samples", [3 * CHUNK - 1, 3 * CHUNK, 3 * CHUNK + 1, 3 * CHUNK + FRAME + 5, 137_013])
def test_chunked_encode_equals_whole_encode_across_chunk_and_span_boundaries(tiny_model, speech, whole_codes, samples):
    model = tiny_model
    x = speech(samples / SR + 0.01, seed=samples % 7)[:samples]
    whole = whole_codes(model, x)
    ours = chunked_codes(model, x, span_steps=60)  # 2.4 s spans of 1 s windows: spans end mid-window too
    assert ours.shape == whole.shape == (num_frames(samples), 16)
    assert torch.equal(ours, whole), f"agreement {(ours == whole).float().mean():.4f}"


def test_a_span_is_quantized_in_pieces_with_hand_overs_between_and_the_codes_of_one_call(
    tiny_model, speech, whole_codes, monkeypatch
):
    """The quantizer of a long span runs ``QUANTIZE_FRAMES`` at a time (the engine's lock is handed to
    live frames between pieces); the pieces give the whole-clip codes bit for bit."""
    x = speech(13.0, seed=2)
    counts = []
    for frames in (10**6, 7):  # one piece per span, then spans of 72, 72 and 19 frames in pieces of 7
        monkeypatch.setattr(encoding, "QUANTIZE_FRAMES", frames)
        counts.append(0)
        ours = chunked_codes(tiny_model, x, span_steps=150, between=lambda: counts.__setitem__(-1, counts[-1] + 1))
        assert torch.equal(ours, whole_codes(tiny_model, x)), frames
    assert counts[1] - counts[0] == 10 + 10 + 2, counts  # 11, 11 and 3 pieces: a hand-over between two


def test_keys_values_offloaded_in_blocks_agree_up_to_one_near_tie_frame(tiny_model, speech, whole_codes):
    model = tiny_model
    x = speech(7.3, seed=5)
    whole = whole_codes(model, x)
    per_step = ModelDims.of(model).kv_bytes_per_step
    # Host blocks are merged by log-sum-exp: equal up to fp32 rounding, not bit for bit. On an Intel CPU
    # with AMX (oneDNN kernels) one frame of this clip sits at a near-tie and flips its later codebooks;
    # on the AMD CPU and the H200 all codes agree. A wrong merge scrambles every frame after the first
    # offloaded step (dozens of frames here), so allow at most one differing frame.
    for device_steps, block in ((0, 7), (40, 13), (100, 1000)):
        ours = chunked_codes(model, x, span_steps=30, kv_device_bytes=device_steps * per_step, host_block_steps=block)
        assert ours.shape == whole.shape
        differing_frames = int((ours != whole).any(dim=1).sum())
        assert differing_frames <= 1, (device_steps, block, differing_frames)


def test_context_matters_on_this_checkpoint(tiny_model, speech, whole_codes, monkeypatch):
    model = tiny_model
    """The checks above can fail: naive chunks, or windows without conv context, disagree."""
    x = speech(6.0, seed=1)
    whole = whole_codes(model, x)
    step = 12 * FRAME  # whole frames per naive chunk
    naive = torch.cat([whole_codes(model, x[i : i + step]) for i in range(0, x.size, step)])
    assert (naive == whole).float().mean() < 0.95
    monkeypatch.setattr(encoding, "conv_context_samples", lambda m: 0)
    assert not torch.equal(chunked_codes(model, x, span_steps=60), whole)


def test_conv_context_covers_the_receptive_field(tiny_model):
    context = encoding.conv_context_samples(tiny_model)
    assert context % FRAME == 0
    assert context >= 4279  # SEANet receptive field of this architecture, in samples
