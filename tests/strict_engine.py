"""An engine for exactness checks, in one place for every test that compares two paths: every transformer
layer scale 1.0 (with the published small scales context barely matters, so a lost state would pass) and
both TF32 flags off while it lives (two paths compare only with the flags set the same; on a CPU they
change nothing). ../shared/reference/NOTES.md says why."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from core.model.engine import Engine
from core.settings import Settings


@contextmanager
def strict_engine(model, device: str = "cpu", **settings) -> Iterator[Engine]:
    """A loaded fp32 engine of ``model`` on ``device`` (``settings``: more Settings fields), unloaded and
    the flags put back on exit."""
    previous = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    engine = Engine(Settings(model=str(model), device=device, dtype="float32", **settings))
    try:
        assert engine.load(), engine.error
        with torch.no_grad():
            scales = [p for name, p in engine.model.named_parameters() if name.endswith("layer_scale.scale")]
            for p in scales:
                p.fill_(1.0)
        assert scales, "no transformer layer scale found: the checkpoint's classes changed"
        yield engine
    finally:
        engine.unload()
        gc.collect()  # a failed test's frames may still hold a stream decoder; the next module measures VRAM
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = previous
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def snr_db(x: np.ndarray, ref: np.ndarray) -> float:
    """The signal-to-error ratio of ``x`` against ``ref`` (same shape), dB; inf when they are equal."""
    assert x.shape == ref.shape, (x.shape, ref.shape)
    err = np.sum((x.astype(np.float64) - ref) ** 2)
    return float("inf") if err == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err))
