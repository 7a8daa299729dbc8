"""The run folder ``OUT/`` of a fine-tuning run (docs/training.md lists its files): what is written
where, and the rule that a run never writes into a folder that is not its own.

A new run needs an empty or missing folder; ``--resume`` needs a folder with a run in it, asked for with
the same settings. Only the main process of a DDP run writes here.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

from core import csv_cells
from core.errors import TrainingError

logger = logging.getLogger(__name__)

SETTINGS = "settings.json"
SPLIT = "split.json"
PROGRESS = "progress.jsonl"
METRICS = "metrics.csv"
RESULT = "result.json"
TENSORBOARD = "tensorboard"
SAMPLES = "samples"
FINAL = "final"
STOP = "STOP"  # created by another process (the page): the run stops after its current step


def check_out(out: Path, resume: bool) -> None:
    """Refuse a folder a new run would mix into, or a resume with nothing to resume."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TrainingError(f"{out} is a file: give a folder for the run.")
    entries = [p.name for p in out.iterdir()] if out.is_dir() else []
    if not resume and entries:
        raise TrainingError(
            f"{out} is not empty ({len(entries)} entries): give a new folder, or add --resume to continue the run in it."
        )
    if resume and not (out / SETTINGS).is_file():
        raise TrainingError(f"{out} holds no run to resume (no {SETTINGS}): drop --resume to start one there.")


def clear_new(out: Path) -> None:
    """Remove what a run wrote into ``out`` before it was refused (``check_out`` found it empty or missing)."""
    import shutil

    for entry in Path(out).iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def write_json(path: Path, value) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(value, indent=2, default=str), encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


class RunFolder:
    """Writes the run's records; ``on_progress`` gets every progress line as it is written."""

    def __init__(self, out: Path, on_progress: Callable[[dict], None] | None = None):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.on_progress = on_progress
        self._writer = None
        self._tensorboard_tried = False

    def _tensorboard(self):
        if not self._tensorboard_tried:
            self._tensorboard_tried = True
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(str(self.out / TENSORBOARD))
            except ImportError:
                logger.warning("tensorboard is not installed (pip install '.[training]'): no event files, CSV only")
        return self._writer

    def emit(self, record: dict) -> None:
        """One progress line: progress.jsonl, the scalars in metrics.csv and TensorBoard, the callback."""
        with open(self.out / PROGRESS, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=_finite) + "\n")
        step = record.get("step", 0)
        scalars = _scalars(record)
        if scalars:
            new = not (self.out / METRICS).exists()
            with open(self.out / METRICS, "a", newline="", encoding="utf-8") as f:
                writer = csv_cells.writer(f)
                if new:
                    writer.writerow(["step", "name", "value"])
                writer.writerows([step, name, value] for name, value in scalars.items())
            board = self._tensorboard()
            if board is not None:
                for name, value in scalars.items():
                    board.add_scalar(name, value, step)
                board.flush()
        if self.on_progress is not None:
            self.on_progress(record)

    def stop_requested(self) -> bool:
        return (self.out / STOP).exists()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _finite(value):
    return None if isinstance(value, float) and not math.isfinite(value) else str(value)


def _scalars(record: dict) -> dict[str, float]:
    """The numbers of a progress line, named ``loss/mel``, ``val/mel_distance``, ``lr`` …"""
    out: dict[str, float] = {}
    for group in ("loss", "val"):
        for name, value in (record.get(group) or {}).items():
            if isinstance(value, int | float):
                out[f"{group}/{name}"] = float(value)
    for name in ("lr", "audio_s_per_s", "peak_mib"):
        if isinstance(record.get(name), int | float):
            out[name] = float(record[name])
    return out
