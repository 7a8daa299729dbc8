"""Shared fixtures: a tiny random-weight checkpoint built once per test session, and
synthetic speech-like signals. Nothing here downloads weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SAMPLE_RATE = 24_000  # Hz


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where CUDA exists (the device machine), never in CI."""
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:  # pragma: no cover - torch is a hard dependency
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """A tiny Qwen3-TTS-Tokenizer-12Hz checkpoint with random weights (a few MB)."""
    from core.model.checkpoints import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-ckpt"))


@pytest.fixture(scope="session")
def second_checkpoint(tmp_path_factory) -> Path:
    """Another tiny checkpoint with other random weights (seed 1): a second model to compare."""
    from core.model.checkpoints import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-ckpt-b"), seed=1)


def speechlike(seconds: float, seed: int = 0, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """A deterministic, speech-like test signal: a gliding harmonic tone with a syllable
    envelope plus a little noise, peak about 0.5."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    f0 = 140 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 3.0 * t)) ** 2 / 4
    x = 0.35 * voiced * envelope + 0.01 * rng.standard_normal(t.size)
    return (0.5 * x / max(np.abs(x).max(), 1e-9)).astype(np.float32)


@pytest.fixture
def speech():
    """Factory fixture: speech(seconds, seed=0) -> float32 mono at 24 kHz."""
    return speechlike


@pytest.fixture(scope="session")
def tiny_engine(tiny_checkpoint):
    """A ready Engine on the tiny checkpoint, shared by tests that do not change its state."""
    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    assert engine.load(), engine.error
    return engine
