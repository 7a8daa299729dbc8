"""core.nn.encode_step: the live CPU encoder's step. The prepared quantizer gives the module's codes bit
for bit; the channels-last SEANet streamed in packets gives the whole pass's steps to fp32 rounding and
fails without its convolutions' state; a live session in packets of 1, 2 or 4 frames gives the codes of
``Engine.encode`` exactly (tiny checkpoint, every layer scale 1.0: context changes codes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.codec import SAMPLES_PER_FRAME
from core.nn.encode_step import ChannelsLastSEANet, PreparedQuantizer
from tests.live_checks import block_sizes, stream

pytestmark = pytest.mark.usefixtures("single_thread")  # see tests/conftest.py


@pytest.fixture(scope="module")
def clip():
    from tests.conftest import speechlike

    return speechlike(2.5, seed=5)  # 31.25 frames: a partial last frame


@pytest.mark.parametrize("frames", [1, 4, 30])
def test_the_prepared_quantizer_gives_the_modules_codes_bit_for_bit(tiny_engine, frames):
    quantizer = tiny_engine.model.encoder.quantizer
    channels = quantizer.semantic_residual_vector_quantizer.input_proj.in_channels
    embeddings = torch.randn(1, channels, frames, generator=torch.Generator().manual_seed(frames))
    with torch.inference_mode():
        expected = quantizer.encode(embeddings, 16)
        got = PreparedQuantizer(quantizer, 16).encode(embeddings, 16)
    assert got.shape == expected.shape == (16, 1, frames)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    with pytest.raises(ValueError, match="prepared for"):
        PreparedQuantizer(quantizer, 8).encode(embeddings, 16)


def test_the_streamed_seanet_gives_the_whole_pass_and_needs_its_state(tiny_engine, clip):
    seanet = tiny_engine.model.encoder.encoder
    x = torch.from_numpy(clip[: 12 * SAMPLES_PER_FRAME])[None, None]
    with torch.inference_mode():
        whole = seanet(x)  # transformers' own pass: causal zero padding on the left
        stream = ChannelsLastSEANet(seanet)
        pieces = [stream(x[..., i : i + 4 * SAMPLES_PER_FRAME]) for i in range(0, x.shape[-1], 4 * SAMPLES_PER_FRAME)]
        forgetful = ChannelsLastSEANet(seanet)
        forgot = []
        for i in range(0, x.shape[-1], 4 * SAMPLES_PER_FRAME):
            forgetful.reset()
            forgot.append(forgetful(x[..., i : i + 4 * SAMPLES_PER_FRAME]))
    streamed = torch.cat(pieces, dim=-1)
    assert streamed.shape == whole.shape
    assert pieces[0].stride(1) == 1  # channels-last: the transformer's (1, steps, C) view is contiguous
    scale = float(whole.abs().max())
    assert float((streamed - whole).abs().max()) < 1e-5 * scale
    assert float((torch.cat(forgot, dim=-1) - whole).abs().max()) > 1e-3 * scale


@pytest.mark.parametrize("packet", [1, 2, 4])
def test_packets_give_the_engines_codes_whatever_the_blocks(tiny_checkpoint, clip, packet):
    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", live_packet_frames=packet))
    assert engine.load(), engine.error
    codes = engine.encode_array(clip).codes
    audio = engine.decode(codes, original_samples=clip.size).samples
    outputs = []
    for schedule in ("1919", "random"):
        result, pieces = stream(engine, clip, block_sizes(clip.size, seed=9)[schedule])
        np.testing.assert_array_equal(result.codes, codes)  # fails if a single code differs
        assert np.abs(result.reconstruction - audio).max() < 1e-4
        whole_packets = clip.size // (packet * SAMPLES_PER_FRAME) * packet * SAMPLES_PER_FRAME
        assert pieces.size == whole_packets  # a packet's audio comes once its last sample is in
        outputs.append(result.reconstruction)
    np.testing.assert_array_equal(outputs[0], outputs[1])  # bit for bit, whatever the blocks


def test_a_packet_of_more_than_eight_frames_is_refused(tiny_checkpoint):
    from core.errors import SettingsError
    from core.settings import Settings

    with pytest.raises(SettingsError, match="1 to 8 frames"):
        Settings(model=str(tiny_checkpoint), device="cpu", live_packet_frames=9)
