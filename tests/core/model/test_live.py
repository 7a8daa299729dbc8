"""Live sessions (core.model.live): admission, microphones at any rate, bad input, pacing, limits,
cleanup, and sharing the model with other jobs."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import soundfile as sf

from core.audio.files import load_audio, resample
from core.errors import AudioInputError, LiveBusy, LiveSessionError
from core.model import live, live_sessions
from core.model.engine import Engine
from core.settings import Settings
from tests.live_checks import stream

pytestmark = pytest.mark.usefixtures("single_thread", "fresh_live")  # see tests/conftest.py


@pytest.fixture
def fresh_live(tiny_engine):
    """Each test starts from the shared engine's live state as a fresh server has it: no measured frame
    cost (a cost measured by an earlier test on a loaded machine admitted 1, and one refusal then left
    a session open for every test after it), and no session left open after it."""
    tiny_engine.live.frame_cost_s = None
    yield
    for session in list(tiny_engine.live._sessions):
        session.close()
    tiny_engine.live.frame_cost_s = None


@pytest.fixture
def make_engine(tiny_checkpoint):
    def make(**settings):
        e = Engine(Settings(model=str(tiny_checkpoint), device="cpu", **settings))
        assert e.load(), e.error
        return e

    return make


def test_the_next_user_is_told_busy_with_the_count_and_a_slot_frees_on_close(tiny_engine):
    first = tiny_engine.live.open(48_000)
    second = tiny_engine.live.open(16_000, 2)
    with pytest.raises(LiveBusy, match="2 of 2 sessions are in use"):
        tiny_engine.live.open(48_000)
    first.close()
    first.close()  # idempotent
    third = tiny_engine.live.open(48_000)
    assert tiny_engine.live.in_use == 2
    second.close(), third.close()
    assert tiny_engine.live.in_use == 0
    with pytest.raises(LiveSessionError, match="ended"):
        first.push(np.zeros(100, np.float32))


def test_live_off_says_so(make_engine):
    with pytest.raises(LiveBusy, match="off"):
        make_engine(live_sessions=0).live.open(48_000)


@pytest.mark.parametrize("rate", [8_000, 16_000, 44_100, 48_000])
def test_a_stereo_microphone_at_any_rate_hears_what_a_file_reader_hears(tiny_engine, speech, tmp_path, rate):
    """The live input is the file readers' Collector: the 24 kHz recording equals load_audio of the
    same samples, whatever the block size, and the streamed codes equal Engine.encode of it."""
    mono = resample(speech(1.7, seed=rate % 5), 24_000, rate)
    x = np.stack([mono, 0.5 * mono], axis=1).astype(np.float32)
    path = tmp_path / "mic.wav"
    sf.write(path, x, rate, subtype="FLOAT")
    result, _ = stream(tiny_engine, x, [rate * 80 // 1000 + 3] * 100, sample_rate=rate)  # odd-sized blocks
    np.testing.assert_array_equal(result.recording.samples, load_audio(path).samples)
    np.testing.assert_array_equal(result.codes, tiny_engine.encode_array(result.recording.samples).codes)
    facts = result.recording.facts
    assert facts.sample_rate == rate and facts.channels == 2
    assert any("Stereo downmixed" in w for w in facts.warnings)


def test_silence_and_clipping_go_through_and_are_named(tiny_engine, speech):
    silent, _ = stream(tiny_engine, np.zeros(24_000, np.float32), [1920] * 20)
    assert silent.codes.shape == (13, 16) and np.isfinite(silent.reconstruction).all()
    assert silent.recording.facts.near_silent
    loud = np.clip(4 * speech(1.0), -1.2, 1.2)  # float input past full scale
    clipped, _ = stream(tiny_engine, loud, [1000] * 30)
    assert clipped.recording.facts.clipped_samples > 0
    np.testing.assert_array_equal(clipped.codes, tiny_engine.encode_array(clipped.recording.samples).codes)


def test_bad_blocks_are_refused_and_the_session_goes_on(tiny_engine, speech):
    with tiny_engine.live.open(24_000, 1, paced=False) as session:
        with pytest.raises(AudioInputError, match="NaN"):
            session.push(np.full(100, np.nan, np.float32))
        with pytest.raises(AudioInputError, match="shape"):
            session.push(np.zeros((100, 2), np.float32))
        session.push(speech(0.5))
        assert session.finish().codes.shape == (7, 16)


def test_a_client_faster_than_real_time_is_refused_and_nothing_is_kept(tiny_engine, speech):
    with tiny_engine.live.open(24_000) as session:
        with pytest.raises(LiveSessionError, match="faster than real time"):
            session.push(speech(live.PACE_SLACK_S + 1.0))
        assert session.input.seconds == 0 and session.encoder.samples_in == 0
        step = session.push(speech(0.2))  # at speaking pace it goes on
        assert step.codes.shape == (2, 16) and step.samples.size == 2 * 1920


def test_a_session_stops_at_its_maximum_length(make_engine, speech):
    e = make_engine(live_max_s=1.0)
    with e.live.open(24_000, paced=False) as session:
        session.push(speech(0.9))
        with pytest.raises(LiveSessionError, match="limit"):
            session.push(speech(0.2))
        assert session.finish().recording.samples.size == int(0.9 * 24_000)
    assert make_engine(live_max_s=100.0, max_duration_s=3.0).live.max_seconds() == 3.0  # the audio limit guards too


def test_an_idle_session_is_closed_when_another_opens(make_engine):
    e = make_engine(live_sessions=1)
    stale = e.live.open(24_000)
    stale.last_input -= live_sessions.IDLE_CLOSE_S + 1
    fresh = e.live.open(24_000)
    assert stale.closed and stale.encoder is None and e.live.in_use == 1
    fresh.close()


def test_another_users_job_waits_for_one_frame_not_the_whole_block(make_engine, speech):
    """A 4 s block takes 50 frames of work; an encode asked for meanwhile gets the lock between two."""
    e = make_engine()
    done: dict[str, float] = {}
    session = e.live.open(24_000, paced=False)

    def live_push():
        session.push(speech(4.0))
        done["live"] = time.perf_counter()

    pusher = threading.Thread(target=live_push)
    pusher.start()
    while session.encoder.frames_out < 3:  # the block is being worked on
        time.sleep(0.005)
    e.encode_array(speech(0.3))
    done["job"] = time.perf_counter()
    pusher.join()
    session.close()
    assert done["job"] < done["live"]


def test_unload_closes_live_sessions(make_engine):
    e = make_engine()
    session = e.live.open(24_000)
    e.unload()
    assert session.closed and e.live.in_use == 0


def test_auto_packets_are_four_frames_only_on_a_cpu_with_a_large_model(make_engine):
    import dataclasses

    engine = make_engine()  # the tiny checkpoint on the CPU, --live-packet-frames 0 (auto)
    assert engine.settings.live_packet_frames == 0
    assert engine.live.packet_frames() == 1  # a few MB of weights: nothing to share between frames
    small = engine._dims
    engine._dims = dataclasses.replace(small, weight_bytes=live_sessions.AUTO_PACKET_MIN_WEIGHT_BYTES)
    assert engine.live.packet_frames() == live_sessions.AUTO_PACKET_CPU == 4  # the published size is 651 MB
    engine.settings = dataclasses.replace(engine.settings, device="cuda:0")
    assert engine.live.packet_frames() == 1  # a GPU steps one frame per graph replay
    engine.settings = dataclasses.replace(engine.settings, device="cpu", live_packet_frames=3)
    assert engine.live.packet_frames() == 3  # chosen: kept
    engine._dims = small
    with engine.live.open(24000, paced=False) as session:
        assert session.encoder.packet_frames == 3
