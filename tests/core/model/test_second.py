"""A second checkpoint beside the first (core.model.second): loaded with the same readiness check,
under the same lock, its codes and audio its own; refused before loading when it does not fit."""

from __future__ import annotations

import json
import shutil
import struct
import threading

import numpy as np
import pytest

from core.audio.files import audio_from_array
from core.codec import NUM_CODEBOOKS
from core.errors import EngineNotReady
from core.model import second
from core.model.engine import Engine, EngineState
from core.settings import Settings


@pytest.fixture(scope="module")
def first(tiny_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    assert engine.load(), engine.error
    return engine


@pytest.fixture
def primary(first):
    """The module's first engine, with no second checkpoint before or after the test."""
    second.unload_second(first)
    yield first
    second.unload_second(first)


def test_a_second_checkpoint_loads_beside_the_first_and_codes_its_own_way(primary, second_checkpoint, speech):
    other = second.load_second(primary, str(second_checkpoint))
    assert other.state == EngineState.READY, other.error
    assert primary.compare is other and second.ready_second(primary) is other
    assert other._lock is primary._lock  # one lock for all model work
    assert other.last_report is not None and other.last_report.ok  # the same three readiness steps ran
    both = second.roundtrip_both(primary, audio_from_array(speech(1.0), 24_000))
    a, b = both.first, both.second
    assert a.encoded.codes.shape == b.encoded.codes.shape
    agreement = both.agreement()
    assert len(agreement) == NUM_CODEBOOKS and all(0.0 <= x <= 1.0 for x in agreement)
    assert min(agreement) < 0.5  # other random weights: other codes
    assert not np.allclose(a.decoded.samples, b.decoded.samples)
    assert np.array_equal(a.encoded.codes, primary.encode_array(speech(1.0)).codes)  # the first is untouched
    second.unload_second(primary)
    assert primary.compare is None and second.ready_second(primary) is None


def test_the_same_checkpoint_twice_codes_the_same(primary, tiny_checkpoint, speech):
    second.load_second(primary, str(tiny_checkpoint))
    both = second.roundtrip_both(primary, audio_from_array(speech(1.0), 24_000))
    assert both.agreement() == [1.0] * NUM_CODEBOOKS


def test_the_first_model_serves_jobs_and_live_frames_while_a_second_checkpoint_loads(
    primary, second_checkpoint, speech, monkeypatch
):
    """The second checkpoint's weights are read without the engine lock: a job and a live frame on
    the first model run to the end while that read is still going. The read is held open by an event
    (a slow disk, deterministically); everything else is the real load, swap and readiness check."""
    import torch

    from core.model import weights

    reading, go = threading.Event(), threading.Event()
    real_read = weights.load_tokenizer

    def slow_read(*args, **kwargs):
        reading.set()
        assert go.wait(120), "the test never let the load go on"
        return real_read(*args, **kwargs)

    monkeypatch.setattr(weights, "load_tokenizer", slow_read)
    loaded: dict = {}
    loader = threading.Thread(target=lambda: loaded.update(engine=second.load_second(primary, str(second_checkpoint))))
    loader.start()
    try:
        assert reading.wait(60), "the load never began reading"
        assert primary.compare is not None and primary.compare.state == EngineState.LOADING
        assert second.ready_second(primary) is None and second.describe(primary)["state"] == "loading"
        with pytest.raises(EngineNotReady, match=r"still loading: try again in a moment"):  # not "none is loaded"
            second.roundtrip_both(primary, audio_from_array(speech(0.5), 24_000))
        assert primary.loading_bytes == weights.checkpoint_weight_bytes(second_checkpoint, torch.float32)
        served: dict = {}

        def first_model_work():
            served["codes"] = primary.encode_array(speech(1.0)).codes
            with primary.frame_work("decode") as (_model, _runner, waited):
                served["frame_waited"] = waited

        worker = threading.Thread(target=first_model_work)
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), "a job on the first model waited for the second checkpoint's load"
        assert served["codes"].shape[1] == NUM_CODEBOOKS and "frame_waited" in served
        assert not go.is_set() and primary.compare.state == EngineState.LOADING  # all of it during the load
    finally:
        go.set()
        loader.join(120)
    assert loaded["engine"].state == EngineState.READY, loaded["engine"].error
    assert second.ready_second(primary) is loaded["engine"] and primary.loading_bytes == 0.0


def _huge_copy(checkpoint, target, floats: int):
    """The checkpoint's config files beside a safetensors file whose header declares ``floats``
    float32 values and holds none of them: only a reader of headers can size it."""
    target.mkdir()
    for name in ("config.json", "preprocessor_config.json"):
        shutil.copy(checkpoint / name, target / name)
    header = json.dumps({"w": {"dtype": "F32", "shape": [floats], "data_offsets": [0, 4 * floats]}}).encode()
    (target / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return target


def test_a_second_checkpoint_that_does_not_fit_is_refused_before_loading(primary, tiny_checkpoint, tmp_path):
    import psutil

    floats = 2 * psutil.virtual_memory().total // 4  # twice this machine's RAM
    other = second.load_second(primary, str(_huge_copy(tiny_checkpoint, tmp_path / "huge", floats)))
    assert other.state == EngineState.FAILED
    assert "does not fit: it was not loaded" in other.error, other.error
    assert "GiB of RAM for its weights" in other.error
    # refused, not failed while loading: a load would have said the file is broken
    assert "Loading the checkpoint" not in other.error and other._tokenizer is None
    assert second.ready_second(primary) is None
    assert primary.ready  # the first model is untouched
    with pytest.raises(EngineNotReady, match=r"failed to load: .*does not fit: it was not loaded") as said:
        second.roundtrip_both(primary, audio_from_array(np.zeros(24_000, np.float32), 24_000))
    assert "Load it again (or another one) on the System tab" in str(said.value)
    second.unload_second(primary)
    with pytest.raises(EngineNotReady, match=r"No second checkpoint is loaded: start with --compare-model DIR"):
        second.roundtrip_both(primary, audio_from_array(np.zeros(24_000, np.float32), 24_000))


def test_the_allowed_share_of_memory_guards_the_second_model_too(tiny_checkpoint, second_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", max_batch_memory_fraction=1e-6))
    assert engine.load()
    other = second.load_second(engine, str(second_checkpoint))
    assert other.state == EngineState.FAILED and "does not fit" in other.error


def test_a_second_checkpoint_needs_the_first(tiny_checkpoint, second_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    other = second.load_second(engine, str(second_checkpoint))
    assert other.state == EngineState.FAILED and "first model" in other.error


def test_weights_are_sized_from_the_headers(tiny_checkpoint, primary):
    import torch

    from core.model.readiness import model_bytes
    from core.model.weights import checkpoint_weight_bytes

    fp32 = checkpoint_weight_bytes(tiny_checkpoint, torch.float32)
    assert fp32 == pytest.approx(model_bytes(primary.model), rel=0.01)
    assert checkpoint_weight_bytes(tiny_checkpoint, torch.bfloat16) == pytest.approx(fp32 / 2, rel=0.01)


def test_bf16_decoding_of_the_same_weights_is_one_use(primary, tiny_checkpoint):
    """The same checkpoint with its decoder in bfloat16 (guarded) against the fp32 first model."""
    other = second.load_second(primary, str(tiny_checkpoint), decode_dtype="bfloat16")
    assert other.state == EngineState.READY, other.error
    assert other.info()["decode_dtype"] == "bfloat16" and primary.info()["decode_dtype"] == "float32"
