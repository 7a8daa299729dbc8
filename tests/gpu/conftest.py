"""Fixtures of the GPU tests: the full-size random checkpoint (``whole_codes``, the strict whole-clip
encode, comes from tests/conftest.py and runs on the model's device with TF32 off)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="session")
def full_checkpoint(tmp_path_factory) -> Path:
    """CODEC_FULL_CHECKPOINT, built there (or in a temporary directory) when missing."""
    path = Path(os.environ.get("CODEC_FULL_CHECKPOINT", "") or tmp_path_factory.mktemp("full") / "ckpt")
    if not (path / "config.json").is_file():
        from core.model.checkpoints import build_full_checkpoint

        build_full_checkpoint(path, reference=ROOT / "core" / "model" / "reference-config.json")
    return path
