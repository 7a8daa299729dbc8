"""Chunked encode and streamed decode against the whole-clip passes, on the tiny checkpoint.

The tiny checkpoint's transformer layer scales are 1.0, so context changes codes: encoding each
chunk on its own agrees with the whole clip on only ~85% of codes here. Chunk sizes are small so
every clip spans several chunks, spans and key/value blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core import streaming

SR = 24_000  # Hz
FRAME = 1920  # samples per code frame
CHUNK = SR  # 1 s encode windows in these tests


@pytest.fixture(scope="module")
def model(tiny_checkpoint):
    from qwen_tts import Qwen3TTSTokenizer

    return Qwen3TTSTokenizer.from_pretrained(str(tiny_checkpoint), device_map="cpu", dtype=torch.float32).model


def whole_codes(model, x: np.ndarray) -> torch.Tensor:
    """The official unchunked encode (``model.encode`` on the whole clip)."""
    with torch.inference_mode():
        wav = torch.from_numpy(x)[None]
        return model.encode(wav, torch.ones_like(wav, dtype=torch.long), return_dict=True).audio_codes[0]


def chunked_codes(model, x: np.ndarray, **kwargs) -> torch.Tensor:
    with torch.inference_mode():
        return streaming.encode(model, torch.from_numpy(x), CHUNK, **kwargs)


@pytest.mark.parametrize("samples", [3 * CHUNK - 1, 3 * CHUNK, 3 * CHUNK + 1, 3 * CHUNK + FRAME + 5, 137_013])
def test_chunked_encode_equals_whole_encode_across_chunk_and_span_boundaries(model, speech, samples):
    x = speech(samples / SR + 0.01, seed=samples % 7)[:samples]
    whole = whole_codes(model, x)
    ours = chunked_codes(model, x, span_steps=60)  # 2.4 s spans of 1 s windows: spans end mid-window too
    assert ours.shape == whole.shape == (-(-samples // FRAME), 16)
    assert torch.equal(ours, whole), f"agreement {(ours == whole).float().mean():.4f}"


def test_keys_values_offloaded_in_blocks_give_the_same_codes(model, speech):
    x = speech(7.3, seed=5)
    whole = whole_codes(model, x)
    attn = model.encoder.encoder_transformer.layers[0].self_attn
    per_step = 2 * len(model.encoder.encoder_transformer.layers) * attn.num_key_value_heads * attn.head_dim * 4
    for device_steps, block in ((0, 7), (40, 13), (100, 1000)):
        ours = chunked_codes(model, x, span_steps=30, kv_device_bytes=device_steps * per_step, host_block_steps=block)
        assert torch.equal(ours, whole), (device_steps, block)


def test_context_matters_on_this_checkpoint(model, speech, monkeypatch):
    """The checks above can fail: naive chunks, or windows without conv context, disagree."""
    x = speech(6.0, seed=1)
    whole = whole_codes(model, x)
    step = 12 * FRAME  # whole frames per naive chunk
    naive = torch.cat([whole_codes(model, x[i: i + step]) for i in range(0, x.size, step)])
    assert (naive == whole).float().mean() < 0.95
    monkeypatch.setattr(streaming, "conv_context_samples", lambda m: 0)
    assert not torch.equal(chunked_codes(model, x, span_steps=60), whole)


def test_conv_context_covers_the_receptive_field(model):
    context = streaming.conv_context_samples(model)
    assert context % FRAME == 0
    assert context >= 4279  # SEANet receptive field of this architecture, in samples


def seam_errors(ours: torch.Tensor, whole: torch.Tensor, seams: list[int], frames: int = 5) -> list[float]:
    """Max abs difference in the ``frames`` frames after each seam (a seam = a chunk start)."""
    return [(ours[s * FRAME:(s + frames) * FRAME] - whole[s * FRAME:(s + frames) * FRAME]).abs().max().item()
            for s in seams]


def test_streamed_decode_matches_the_whole_decode_at_every_seam(model, speech):
    codes = whole_codes(model, speech(6.0, seed=2))  # 75 frames
    chunk = 30  # seams at frames 30 and 60, where the official 25-frame context is truncated
    with torch.inference_mode():
        whole = streaming.decode_whole(model, codes)
        ours = streaming.decode(model, codes, chunk)
        official = streaming.decode_official(model, codes, chunk)
    assert ours.shape == whole.shape == official.shape == (75 * FRAME,)
    seams = list(range(chunk, 75, chunk))
    ours_err, official_err = seam_errors(ours, whole, seams), seam_errors(official, whole, seams)
    for seam, a, b in zip(seams, ours_err, official_err):
        assert a < 1e-4, f"seam at frame {seam}: ours differs by {a}"
        assert b > 1e-3, f"seam at frame {seam}: official differs by only {b} (context does not matter?)"
        assert a < b / 100
    assert (ours - whole).abs().max() < 1e-4  # between seams too


def test_decode_does_not_depend_on_chunk_size(model, speech):
    codes = whole_codes(model, speech(3.0, seed=4))
    with torch.inference_mode():
        one = streaming.decode(model, codes, 1)  # shorter than every convolution's left state
        big = streaming.decode(model, codes, 300)
    torch.testing.assert_close(one, big, atol=1e-5, rtol=0)


def test_batched_decode_equals_one_by_one(model, speech):
    codes = [whole_codes(model, speech(s, seed=i)) for i, s in enumerate((2.0, 0.7, 3.1))]
    with torch.inference_mode():
        batch = streaming.decode_batch(model, codes, 9)
        single = [streaming.decode(model, c, 9) for c in codes]
    for b, s, c in zip(batch, single, codes):
        assert b.shape == (c.shape[0] * FRAME,)
        torch.testing.assert_close(b, s, atol=1e-5, rtol=0)


def test_merge_attention_is_exact_over_split_keys():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 20, 8), torch.randn(1, 2, 20, 8)
    parts = [streaming.attention_with_lse(q, k[:, :, a:b], v[:, :, a:b], 8 ** -0.5, False)
             for a, b in ((0, 7), (7, 8), (8, 20))]
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(streaming.merge_attention(parts), expected, atol=1e-6, rtol=1e-5)


def test_progress_is_reported_per_window_and_chunk(tiny_checkpoint, speech):
    from core.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), encode_chunk_s=5.0, decode_chunk_frames=50))
    assert engine.load()
    seen_encode, seen_decode = [], []
    codes = engine.encode_array(speech(12.0), progress=seen_encode.append).codes
    engine.decode(codes, progress=seen_decode.append)
    assert len(seen_encode) == 3 and seen_encode == sorted(seen_encode) and seen_encode[-1] == 1.0
    assert len(seen_decode) == 3 and seen_decode[-1] == 1.0  # 150 frames in 50-frame chunks
