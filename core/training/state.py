"""The resumable state of a run: ``OUT/state/latest.pt`` (trained decoder parts, discriminators, both
optimizers, the GradScaler, the step, the RNG, the evaluations so far).

It is written to a temporary file, flushed to disk, then renamed over ``latest.pt``: a run killed at any
moment (kill -9, a full disk) leaves the previous complete state as the latest, never half of one.
The data position is the step itself (:mod:`core.training.windows` draws step ``s``'s segments from
(seed, s) alone), so a resumed run continues exactly where the saved one was.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch

from core.errors import TrainingError

logger = logging.getLogger(__name__)

STATE_DIR = "state"
LATEST = "latest.pt"


def latest_path(out: Path) -> Path:
    return Path(out) / STATE_DIR / LATEST


def save(out: Path, state: dict) -> Path:
    """Write ``state`` atomically as the latest state; a disk error is a TrainingError in words, and
    the previous state stays the latest."""
    path = latest_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{LATEST}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise TrainingError(
            f"The state of step {state.get('step')} could not be written to {path.parent} ({e.strerror or e}); "
            "the last complete state is kept. Free disk space, then run again with --resume."
        ) from e
    logger.info("saved the state of step %d", state.get("step", -1))
    return path


def load(out: Path) -> dict:
    path = latest_path(out)
    if not path.is_file():
        raise TrainingError(f"{Path(out)} has no saved state to resume ({path} is missing): start a new run instead.")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:
        raise TrainingError(f"{path} cannot be read ({type(e).__name__}: {e}); start a new run.") from e


def rng_state() -> dict:
    return {"torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_state(saved: dict) -> None:
    torch.set_rng_state(saved["torch"])
    if saved.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(saved["cuda"])
