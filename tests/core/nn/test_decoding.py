"""core/nn/decoding.py: the streamed decode against the whole-utterance decode and the official chunked one,
with the convolutions channels-first (the model's own modules) and channels-last (``core.nn.conv_layout``)."""

from __future__ import annotations

import pytest
import torch

from core.codec import SAMPLES_PER_FRAME as FRAME
from core.nn import decoding, fast_decode


def seam_errors(ours: torch.Tensor, whole: torch.Tensor, seams: list[int], frames: int = 5) -> list[float]:
    """Max abs difference in the ``frames`` frames after each seam (a seam = a chunk start)."""
    return [
        (ours[s * FRAME : (s + frames) * FRAME] - whole[s * FRAME : (s + frames) * FRAME]).abs().max().item()
        for s in seams
    ]


def runner(model, layout: str):
    """The engine's decoder runner (eager fp32) with its convolutions in ``layout``."""
    options = fast_decode.DecodeOptions("float32", channels_last=layout == "channels-last")
    return fast_decode.FastDecoder(model.decoder, options)


LAYOUTS = pytest.mark.parametrize("layout", ["channels-first", "channels-last"])


@LAYOUTS
def test_streamed_decode_matches_the_whole_decode_at_every_seam(tiny_model, speech, whole_codes, layout):
    model = tiny_model
    codes = whole_codes(model, speech(6.0, seed=2))  # 75 frames
    chunk = 30  # seams at frames 30 and 60, where the official 25-frame context is truncated
    with torch.inference_mode():
        whole = decoding.decode_whole(model, codes)
        ours = decoding.decode(model, codes, chunk, runner=runner(model, layout))
        official = decoding.decode_official(model, codes, chunk)
    assert ours.shape == whole.shape == official.shape == (75 * FRAME,)
    seams = list(range(chunk, 75, chunk))
    ours_err, official_err = seam_errors(ours, whole, seams), seam_errors(official, whole, seams)
    for seam, a, b in zip(seams, ours_err, official_err, strict=True):
        assert a < 1e-4, f"seam at frame {seam}: ours differs by {a}"
        assert b > 1e-3, f"seam at frame {seam}: official differs by only {b} (context does not matter?)"
        assert a < b / 100
    assert (ours - whole).abs().max() < 1e-4  # between seams too


@LAYOUTS
def test_decode_does_not_depend_on_chunk_size(tiny_model, speech, whole_codes, layout):
    model = tiny_model
    codes = whole_codes(model, speech(3.0, seed=4))
    with torch.inference_mode():
        one = decoding.decode(model, codes, 1, runner=runner(model, layout))  # shorter than every left state
        big = decoding.decode(model, codes, 300, runner=runner(model, layout))
    torch.testing.assert_close(one, big, atol=1e-5, rtol=0)


@LAYOUTS
def test_batched_decode_equals_one_by_one(tiny_model, speech, whole_codes, layout):
    model = tiny_model
    codes = [whole_codes(model, speech(s, seed=i)) for i, s in enumerate((2.0, 0.7, 3.1))]
    with torch.inference_mode():
        batch = decoding.decode_batch(model, codes, 9, runner=runner(model, layout))
        single = [decoding.decode(model, c, 9, runner=runner(model, layout)) for c in codes]
    for b, s, c in zip(batch, single, codes, strict=True):
        assert b.shape == (c.shape[0] * FRAME,)
        torch.testing.assert_close(b, s, atol=1e-5, rtol=0)
