import json

import numpy as np

from core.model.readiness import check_roundtrip, check_weights, probe_signal


def test_cpu_readiness_reports_three_honest_steps(tiny_engine):
    report = tiny_engine.check()
    names = [s.name for s in report.steps]
    assert names == ["cuda", "weights", "roundtrip"]
    cuda, weights, trip = report.steps
    assert cuda.status == "skipped" and "no CUDA" in cuda.detail and "CPU" in cuda.detail
    assert weights.status == "pass"
    expected = sum(
        t.numel() * t.element_size() for t in list(tiny_engine.model.parameters()) + list(tiny_engine.model.buffers())
    )
    assert weights.data["bytes"] == expected
    assert trip.status == "pass" and trip.data["frames"] == 13 and trip.seconds > 0
    assert report.ok
    json.dumps(report.to_dict())  # plain JSON


def test_roundtrip_check_fails_on_wrong_output_length():
    step = check_roundtrip(lambda x: np.zeros((13, 16), np.int64), lambda c: np.zeros(100, np.float32))
    assert step.status == "fail" and "output 100 samples" in step.detail


def test_roundtrip_check_fails_on_out_of_range_codes_and_nan():
    step = check_roundtrip(lambda x: np.full((13, 16), 4096), lambda c: np.full(13 * 1920, np.nan, np.float32))
    assert step.status == "fail"
    assert "outside 0..2047" in step.detail and "NaN" in step.detail


def test_roundtrip_check_reports_exceptions_instead_of_raising():
    def boom(x):
        raise RuntimeError("kaput")

    step = check_roundtrip(boom, boom)
    assert step.status == "fail" and "kaput" in step.detail


def test_weights_check_fails_when_a_tensor_is_elsewhere(tiny_engine):
    step = check_weights(tiny_engine.model, "cuda:0")
    assert step.status == "fail" and "not on cuda:0" in step.detail


def test_probe_signal_is_one_second_and_bounded():
    x = probe_signal()
    assert x.shape == (24_000,) and 0.4 < np.abs(x).max() <= 0.5


def test_cuda_step_reports_native_bf16_as_the_engine_decides(monkeypatch):
    # the engine refuses bf16 on GPUs that only emulate it; the CUDA step must not say "native bf16: yes"
    import types

    import torch

    from core.model.readiness import check_cuda

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda dev: types.SimpleNamespace(name="Tesla T4", major=7, minor=5)
    )
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev: (8 << 30, 16 << 30))
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    step = check_cuda("cuda:0")
    assert step.status == "pass", step.detail
    assert step.data["bf16"] is False and "native bf16: no" in step.detail
