import dataclasses
import threading
import time

import numpy as np
import pytest

from core.codec import check_codes
from core.errors import EngineNotReady, TokenFileError
from core.model.engine import Engine, EngineState
from core.settings import Settings

FRAME = 1920  # samples per frame


@pytest.mark.parametrize("samples", [FRAME, FRAME + 1, 3 * FRAME - 1, 24_000 * 2 + 7])
def test_roundtrip_shapes_lengths_and_ranges(tiny_engine, speech, samples):
    x = speech(samples / 24_000 + 0.01)[:samples]
    encoded = tiny_engine.encode_array(x)
    frames = -(-samples // FRAME)
    assert encoded.codes.shape == (frames, 16)
    assert encoded.codes.dtype == np.int64
    assert encoded.codes.min() >= 0 and encoded.codes.max() <= 2047
    full = tiny_engine.decode(encoded.codes)
    assert full.samples.shape == (frames * FRAME,)
    assert full.samples.dtype == np.float32 and full.sample_rate == 24_000
    assert np.isfinite(full.samples).all()
    trimmed = tiny_engine.decode(encoded.codes, original_samples=samples)
    np.testing.assert_array_equal(trimmed.samples, full.samples[:samples])


def test_roundtrip_result_trims_to_input_and_times_jobs(tiny_engine, speech):
    from core.audio.files import audio_from_array

    result = tiny_engine.roundtrip(audio_from_array(speech(1.3), 24_000, name="clip"))
    assert result.decoded.samples.shape == (int(1.3 * 24_000),)
    assert result.encoded.seconds > 0 and result.decoded.seconds > 0
    assert result.encoded.peak_mib is None  # no GPU here


def test_encode_is_deterministic(tiny_engine, speech):
    x = speech(2.0, seed=3)
    np.testing.assert_array_equal(tiny_engine.encode_array(x).codes, tiny_engine.encode_array(x).codes)


def test_batch_gives_the_same_codes_as_one_by_one(tiny_engine, speech):
    """Every frame, the last partial one included (core.nn.batching pads each clip at every strided
    conv as a lone clip's conv does); lengths with odd 25 Hz steps exercise the downsample. One
    near-tie frame may flip where batched and lone fp32 rounding differ (AMX CPUs)."""
    from core.audio.files import audio_from_array

    clips = [audio_from_array(speech(s, seed=i), 24_000) for i, s in enumerate((1.0, 2.5, 0.5, 0.33, 1.9999))]
    batch = tiny_engine.encode_batch(clips)
    differing = 0
    for clip, result in zip(clips, batch, strict=True):
        single = tiny_engine.encode(clip).codes
        assert result.codes.shape == single.shape
        differing += int((result.codes != single).any(axis=1).sum())
    assert differing <= 1
    decoded = tiny_engine.decode_batch([r.codes for r in batch])
    for result, dec in zip(batch, decoded, strict=True):
        np.testing.assert_allclose(dec.samples, tiny_engine.decode(result.codes).samples, atol=1e-4)


@pytest.mark.parametrize(
    "codes, message",
    [
        (np.zeros((5, 8), np.int64), "shape"),
        (np.zeros((0, 16), np.int64), "zero frames"),
        (np.zeros((5, 16), np.float32), "integers"),
        (np.full((5, 16), 2048), "0..2047"),
        (np.full((5, 16), -1), "0..2047"),
    ],
)
def test_bad_codes_are_refused_clearly(tiny_engine, codes, message):
    with pytest.raises(TokenFileError, match=message):
        tiny_engine.decode(codes)
    with pytest.raises(TokenFileError):
        check_codes(codes)


def test_missing_weights_put_the_engine_in_failed_with_advice(tmp_path):
    engine = Engine(Settings(model=str(tmp_path / "absent")))
    assert engine.load() is False
    assert engine.state == EngineState.FAILED
    assert str(tmp_path / "absent") in engine.error
    assert "--model DIR" in engine.error and "build-checkpoint" in engine.error
    with pytest.raises(EngineNotReady, match="not loaded"):
        engine.encode_array(np.zeros(4000, np.float32))
    report = engine.check()
    assert not report.ok
    assert report.step("weights").status == "fail"
    assert report.step("roundtrip").status == "skipped"


def test_unload_then_reload(tiny_checkpoint, speech):
    engine = Engine(Settings(model=str(tiny_checkpoint)))
    assert engine.state == EngineState.UNLOADED
    assert engine.load() and engine.ready
    engine.unload()
    assert engine.state == EngineState.UNLOADED
    with pytest.raises(EngineNotReady):
        engine.encode_array(speech(0.5))
    assert engine.load() and engine.encode_array(speech(0.5)).codes.shape == (7, 16)


def test_two_threads_never_interleave_model_work(tiny_checkpoint, speech):
    engine = Engine(Settings(model=str(tiny_checkpoint)))
    engine.load()
    events: list[tuple[str, int]] = []
    model = engine.model
    real_encode = model.encode

    def spy_encode(*args, **kwargs):  # records entry and exit of the real model call
        events.append(("enter", threading.get_ident()))
        time.sleep(0.05)  # widen the window in which another thread could slip in
        try:
            return real_encode(*args, **kwargs)
        finally:
            events.append(("exit", threading.get_ident()))

    model.encode = spy_encode
    x = speech(1.0)
    threads = [threading.Thread(target=lambda: [engine.encode_array(x) for _ in range(3)]) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(events) >= 18
    for start in range(0, len(events), 2):  # strictly enter/exit pairs from the same thread
        (kind_a, tid_a), (kind_b, tid_b) = events[start], events[start + 1]
        assert (kind_a, kind_b) == ("enter", "exit") and tid_a == tid_b


def test_stats_and_clear_vram_report_figures(tiny_engine):
    stats = tiny_engine.stats()
    assert stats["process_rss_mib"] > 50
    assert 0 < stats["system_ram_used_mib"] <= stats["system_ram_total_mib"]
    cleared = tiny_engine.clear_vram()
    assert set(cleared) == {"before", "after"}
    assert cleared["after"]["device"] == "cpu"


def test_info_labels_cpu_mode(tiny_engine):
    info = tiny_engine.info()
    assert info["state"] == "ready"
    assert info["device_label"].startswith("CPU")
    assert info["resident_mib"] > 1


def test_info_counts_nothing_and_its_fields_are_read_directly(tiny_engine, monkeypatch):
    """``info()`` is called for one field in many places: it reads what the load counted once and
    never walks the model's parameters again."""
    from core.model import readiness

    resident = readiness.model_bytes(tiny_engine.model) / 2**20
    monkeypatch.setattr(readiness, "model_bytes", lambda model: pytest.fail("info() walked every parameter"))
    info = tiny_engine.info()
    assert info["resident_mib"] == pytest.approx(resident, abs=0.05)
    assert info["random_weights"] is tiny_engine.random_weights is True
    assert info["device_label"] == tiny_engine.device_label


def test_empty_batches_give_empty_results(tiny_engine):
    # a batch page with no files must not crash with "max() arg is an empty sequence"
    assert tiny_engine.encode_batch([]) == []
    assert tiny_engine.decode_batch([]) == []


def test_encoding_no_samples_is_refused_clearly(tiny_engine):
    from core.errors import AudioInputError

    with pytest.raises(AudioInputError, match="no audio samples"):
        tiny_engine.encode_array(np.zeros(0, np.float32))


@pytest.mark.parametrize("original", [-1, 0, 5 * FRAME + 1])
def test_decode_refuses_an_original_length_that_does_not_fit_the_codes(tiny_engine, original):
    # -1 used to drop the last sample silently; too large used to return fewer samples than asked
    codes = np.zeros((5, 16), np.int64)
    with pytest.raises(TokenFileError, match="original_samples"):
        tiny_engine.decode(codes, original_samples=original)
    assert tiny_engine.decode(codes, original_samples=4 * FRAME + 1).samples.shape == (4 * FRAME + 1,)


def test_a_failed_reload_forgets_the_previous_model(tiny_checkpoint, tmp_path):
    engine = Engine(Settings(model=str(tiny_checkpoint)))
    assert engine.load() and engine.info()["random_weights"] is True
    engine.settings = dataclasses.replace(engine.settings, model=str(tmp_path / "gone"))
    assert not engine.load()
    info = engine.info()
    assert info["model_path"] is None and info["load_seconds"] is None and info["random_weights"] is False


def test_progress_is_reported_per_window_and_chunk(tiny_checkpoint, speech):
    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), encode_chunk_s=5.0, decode_chunk_frames=50))
    assert engine.load()
    seen_encode, seen_decode = [], []
    codes = engine.encode_array(speech(12.0), progress=seen_encode.append).codes
    engine.decode(codes, progress=seen_decode.append)
    assert len(seen_encode) == 3 and seen_encode == sorted(seen_encode) and seen_encode[-1] == 1.0
    assert len(seen_decode) == 3 and seen_decode[-1] == 1.0  # 150 frames in 50-frame chunks


def test_decode_and_the_token_reader_share_one_rule_for_lengths(tiny_engine):
    # 1920.0 used to pass the engine but not the token file reader
    with pytest.raises(TokenFileError, match="must be an integer"):
        tiny_engine.decode(np.zeros((1, 16), np.int64), original_samples=1920.0)


def test_roundtrip_reports_progress_over_encode_then_decode(tiny_checkpoint, speech):
    from core.audio.files import audio_from_array
    from core.model.engine import ROUNDTRIP_ENCODE_SHARE

    engine = Engine(Settings(model=str(tiny_checkpoint), encode_chunk_s=2.0, decode_chunk_frames=25))
    assert engine.load()
    seen: list[float] = []
    result = engine.roundtrip(audio_from_array(speech(5.0), 24_000), progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0
    encode_steps = [f for f in seen if f <= ROUNDTRIP_ENCODE_SHARE]
    assert len(encode_steps) == 3 and encode_steps[-1] == ROUNDTRIP_ENCODE_SHARE  # 5 s in 2 s windows
    assert len(seen) - len(encode_steps) == 3  # 63 frames in 25-frame chunks
    assert result.decoded.samples.size == 5 * 24_000


def test_codes_longer_than_the_duration_limit_are_refused_before_any_model_work(tiny_checkpoint):
    """Issue 8, item 1: the engine is not even loaded; the limit is checked first."""
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", max_duration_s=1.0))
    codes = np.zeros((25, 16), dtype=np.int64)  # 2 s of codes
    with pytest.raises(TokenFileError, match="decode to 2.0 s of audio, over the 1.0 s limit"):
        engine.decode(codes)
    with pytest.raises(TokenFileError, match="over the 1.0 s limit"):
        engine.decode_batch([codes[:5], codes])
    with pytest.raises(EngineNotReady):
        engine.decode(codes[:10])  # within the limit: on to the model, which is not loaded
