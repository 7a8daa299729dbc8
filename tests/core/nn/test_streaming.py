"""core.nn.streaming through a live session: a clip pushed in blocks of any size gives the codes of
``Engine.encode`` and, bit for bit, the same audio whatever the blocks; against ``Engine.decode``
(300-frame chunks) the audio agrees to fp32 rounding (matmuls round differently for 1 and 300 rows).

The tiny checkpoint's transformer layer scales are all 1.0, so context changes codes and audio: the
last tests show that a stream without the carried state fails these checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.codec import SAMPLES_PER_FRAME
from core.errors import AudioInputError
from core.model.engine import Engine
from core.nn import streaming
from core.nn.kv_cache import KVStore
from core.settings import Settings
from tests.live_checks import block_sizes, stream

pytestmark = pytest.mark.usefixtures("single_thread")  # see tests/conftest.py

SECONDS = 2.5  # 31.25 frames: a partial last frame
AUDIO_ATOL = 1e-4  # streamed against the 300-frame decode: measured ≤ 1e-5 here (fp32 rounding)


@pytest.fixture(scope="module")
def clip():
    from tests.conftest import speechlike

    return speechlike(SECONDS, seed=3)


@pytest.fixture(scope="module")
def reference(tiny_engine, clip):
    codes = tiny_engine.encode_array(clip).codes
    audio = tiny_engine.decode(codes, original_samples=clip.size).samples
    streamed, _ = stream(tiny_engine, clip, [SAMPLES_PER_FRAME] * 40)
    return codes, audio, streamed.reconstruction


@pytest.mark.parametrize("schedule", ["1 sample", "1919", "1920", "7 s", "random"])
def test_blocks_of_any_size_give_the_engines_codes_and_one_audio(tiny_engine, clip, reference, schedule):
    codes, audio, streamed = reference
    result, pieces = stream(tiny_engine, clip, block_sizes(clip.size, seed=7)[schedule])
    np.testing.assert_array_equal(result.codes, codes)
    np.testing.assert_array_equal(result.reconstruction, streamed)  # bit for bit, whatever the blocks
    assert result.reconstruction.shape == audio.shape
    assert np.abs(result.reconstruction - audio).max() < AUDIO_ATOL
    packet = tiny_engine.live.packet_frames() * SAMPLES_PER_FRAME  # whole packets as they came; the last
    assert pieces.size == clip.size // packet * packet
    np.testing.assert_array_equal(
        pieces, result.reconstruction[: pieces.size]
    )  # frames and the partial one at the stop
    assert tiny_engine.live.in_use == 0


def test_blocks_give_the_chunked_engine_path_too(tiny_checkpoint, clip):
    """With 1 s encode windows the engine encodes this clip in spans (core.nn.encoding); same codes."""
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", encode_chunk_s=1.0, decode_chunk_frames=7))
    assert engine.load(), engine.error
    codes = engine.encode_array(clip).codes
    result, _ = stream(engine, clip, block_sizes(clip.size, seed=11)["random"])
    np.testing.assert_array_equal(result.codes, codes)
    audio = engine.decode(codes, original_samples=clip.size).samples
    assert np.abs(result.reconstruction - audio).max() < AUDIO_ATOL


def test_without_the_conv_context_or_the_keys_values_the_codes_differ(tiny_engine, clip, reference, monkeypatch):
    codes = reference[0]
    with monkeypatch.context() as m:
        m.setattr(streaming, "ChannelsLastSEANet", lambda seanet: None)  # frames through the context window
        m.setattr(streaming.EncoderState, "conv_steps", _no_context(streaming.EncoderState.conv_steps))
        result, _ = stream(tiny_engine, clip, [SAMPLES_PER_FRAME] * 40)
    assert (result.codes == codes).mean() < 0.95
    with monkeypatch.context() as m:  # the streaming SEANet without its convolutions' last inputs
        from core.nn.encode_step import ChannelsLastSEANet

        forget = ChannelsLastSEANet._conv

        def forgetful(self, module, x):
            self.state.pop(id(module), None)
            return forget(self, module, x)

        m.setattr(ChannelsLastSEANet, "_conv", forgetful)
        result, _ = stream(tiny_engine, clip, [SAMPLES_PER_FRAME] * 40)
    assert (result.codes == codes).mean() < 0.95
    with monkeypatch.context() as m:
        m.setattr(KVStore, "advance", lambda self, steps: None)  # every frame forgets the earlier ones
        result, _ = stream(tiny_engine, clip, [SAMPLES_PER_FRAME] * 40)
    assert (result.codes == codes).mean() < 0.95


def _no_context(conv_steps):
    def without(self, window, skip_samples):
        return conv_steps(self, window[skip_samples:], 0)

    return without


def test_without_the_decoder_state_the_audio_differs(tiny_engine, clip, reference, monkeypatch):
    audio = reference[1]
    original = streaming.StreamingDecoder.push

    def forgetful(self, codes):
        self.reset()  # every block starts from zeros
        return original(self, codes)

    monkeypatch.setattr(streaming.StreamingDecoder, "push", forgetful)
    result, _ = stream(tiny_engine, clip, [SAMPLES_PER_FRAME] * 40)
    assert np.abs(result.reconstruction - audio).max() > 100 * AUDIO_ATOL


def test_streams_reset_to_a_new_clip(tiny_engine, clip, reference):
    codes = reference[0]
    with tiny_engine.model_work("encode") as (model, runner):
        encoder = streaming.StreamingEncoder(model, clip.size)
        encoder.push(np.ones(5000, np.float32))  # another clip, abandoned
        encoder.reset()
        out = np.concatenate([encoder.push(clip), encoder.finish()])
        with pytest.raises(AudioInputError, match="finished"):
            encoder.push(clip[:10])
        with pytest.raises(AudioInputError, match="at most"):
            streaming.StreamingEncoder(model, 100).push(clip[:101])
        encoder.close()
    np.testing.assert_array_equal(out, codes)


def test_a_session_shorter_than_one_frame_is_refused_when_it_stops(tiny_engine):
    session = tiny_engine.live.open(24_000, 1, paced=False)
    session.push(np.zeros(1000, np.float32))
    with pytest.raises(AudioInputError, match="at least 80 ms"):
        session.finish()
    assert tiny_engine.live.in_use == 0
