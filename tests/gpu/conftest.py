"""Fixtures of the GPU tests: the full-size random checkpoint and the strict whole-clip encode."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from core.nn import encoding

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="session")
def full_checkpoint(tmp_path_factory) -> Path:
    """CODEC_FULL_CHECKPOINT, built there (or in a temporary directory) when missing."""
    path = Path(os.environ.get("CODEC_FULL_CHECKPOINT", "") or tmp_path_factory.mktemp("full") / "ckpt")
    if not (path / "config.json").is_file():
        from core.model.checkpoints import build_full_checkpoint

        build_full_checkpoint(path, reference=ROOT / "core" / "model" / "reference-config.json")
    return path


@pytest.fixture
def whole_codes():
    """whole_codes(engine, x): the official whole-clip encode (``model.encode``), convolutions in full
    fp32 (no TF32), as codes (frames, 16)."""

    def encode(engine, x: np.ndarray) -> np.ndarray:
        previous = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            with torch.inference_mode():
                return encoding.encode(engine.model, torch.from_numpy(x).cuda(), None).cpu().numpy()
        finally:
            torch.backends.cudnn.allow_tf32 = previous

    return encode
