"""Fine-tuning runs the page starts, without Gradio: one at a time, each in a process of its own
(``python -m webui.jobs.finetune_worker``), so that training never holds the engine's lock nor a
queue of the page's events; the web process only starts it, asks it to stop (SIGTERM: the trainer
ends after the current step with its checkpoint and an exported model) and reads what it writes.

A run is a folder under the runs folder (``run-<date>-<time>-<data>``) in the trainer's layout
(``core.training``: ``progress.jsonl``, ``result.json``, ``samples/``, ``final/``), which the trainer
alone writes; beside it the page keeps what it asked (``<run>.page.json``) and the process's output
(``<run>.page.log``). Its state is read from those files alone (progress lines read once,
incrementally), so a page opened later, or after a restart of the server, shows the same run.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.names import safe_name
from core.units import MIB
from webui.jobs.finetune import FinetuneInputError

logger = logging.getLogger(__name__)

RUN_PREFIX = "run-"  # a run folder's name starts so (nothing else in the runs folder is a run)
LOG_SUFFIX = ".page.log"  # beside a run folder: its process's stdout and stderr
ASKED_SUFFIX = ".page.json"  # beside a run folder: the settings the page asked for (the trainer writes its own)
PROGRESS_FILE, RESULT_FILE, SPLIT_FILE = "progress.jsonl", "result.json", "split.json"
MODEL_FOLDER = "final"  # the exported checkpoint (result.json's "model")
SAMPLES_FOLDER, REFERENCE_FOLDER = (
    "samples",
    "reference",
)  # held-out clips decoded at each evaluation, and their originals
MAX_READ_BYTES = int(4 * MIB)  # of progress.jsonl read at once (about 12,000 lines)
MAX_POINTS = 600  # points of a curve kept (older ones thinned, every eval point kept)
LOG_TAIL_CHARS = 600  # of page.log, quoted when a run ended without a result
PROJECT = Path(__file__).resolve().parents[2]  # where `python -m webui...` finds the package

RUNNING, STOPPING, DONE, STOPPED, FAILED, ENDED, NONE = (
    "running",
    "stopping",
    "done",
    "stopped",
    "failed",
    "ended",  # the process is gone and wrote no result (killed, or the server stopped meanwhile)
    "none",
)


@dataclass
class Progress:
    """A run's progress lines as read so far: the train loss and held-out curves, the last step line."""

    offset: int = 0  # bytes of progress.jsonl read
    train: list[tuple[int, float]] = field(default_factory=list)  # (step, train loss)
    val: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out distance)
    train_name: str = ""  # which loss the train curve is
    val_name: str = ""  # which held-out metric the held-out curve is
    last: dict = field(default_factory=dict)  # the last step line
    val_last: dict = field(default_factory=dict)  # the last eval line's values
    sample_clip: str = ""  # the held-out clip the page lets you hear (the first one the trainer wrote)
    sample: tuple[int, str] = (-1, "")  # (step, path relative to the run) of its latest decoding

    def read(self, path: Path) -> None:
        """The lines written since the last read (a line still being written waits for its end)."""
        try:
            with open(path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read(MAX_READ_BYTES)  # a long run's lines are taken over a few reads
        except OSError:
            return
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        for raw in chunk[:end].splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                self._take(line)

    def _take(self, line: dict) -> None:
        step = line.get("step")
        if not isinstance(step, int):
            return
        if line.get("kind") == "step" and isinstance(line.get("loss"), dict):
            self.train_name, value = _pick(line["loss"], self.train_name, TRAIN_PREFERRED)
            if value is not None:
                self.train.append((step, value))
                if len(self.train) > MAX_POINTS:
                    self.train = self.train[::2]  # the curve's shape kept, its points halved
            self.last = line
        elif line.get("kind") == "eval" and isinstance(line.get("val"), dict):
            self.val_name, value = _pick(line["val"], self.val_name, VAL_PREFERRED)
            if value is not None:
                self.val.append((step, value))
            self.val_last = dict(line["val"])
        elif line.get("kind") == "sample" and isinstance(line.get("clip"), str) and isinstance(line.get("path"), str):
            self.sample_clip = self.sample_clip or line["clip"]
            if line["clip"] == self.sample_clip:
                self.sample = (step, line["path"])


TRAIN_PREFERRED = ("total", "mel")  # the train curve: the total loss where there is one, else the mel loss
VAL_PREFERRED = ("log_mel_distance", "mel_distance", "mel")  # the held-out curve's metric, where written so


def _pick(values: dict, chosen: str, preferred: tuple[str, ...]) -> tuple[str, float | None]:
    """(name, value): the series already chosen, else the first preferred name present, else the first
    numeric one."""
    numbers = {k: float(v) for k, v in values.items() if isinstance(v, int | float) and v == v}
    if not chosen:
        chosen = next((n for n in preferred if n in numbers), next(iter(numbers), ""))
    return chosen, numbers.get(chosen)


@dataclass(frozen=True)
class RunState:
    """What the page shows of a run."""

    name: str  # the run folder's name ("" when there is none)
    status: str  # RUNNING, STOPPING, DONE, STOPPED, FAILED, ENDED or NONE
    steps: int = 0  # asked for
    step: int = 0  # the last step done
    progress: Progress = field(default_factory=Progress)
    elapsed_s: float = 0.0
    message: str = ""  # the trainer's words at the end (or the end of its log)
    has_model: bool = False  # an exported model is there to compare with the base
    result: dict = field(default_factory=dict)
    folder: Path | None = None  # the run folder

    @property
    def active(self) -> bool:
        return self.status in (RUNNING, STOPPING)

    @property
    def left_s(self) -> float | None:
        """An honest time left: the time per step so far times the steps left (None before a step)."""
        if self.step <= 0 or not self.active:
            return None
        return self.elapsed_s / self.step * max(self.steps - self.step, 0)


class FinetuneRuns:
    """The runs folder and the one training process at a time (the page's only state of a run
    beside its files)."""

    def __init__(self, root: Path, python: str = sys.executable):
        self.root = Path(root)
        self.python = python
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._current: Path | None = None
        self._stopping = False
        self._started = 0.0
        self._progress: dict[str, Progress] = {}  # by run name: what was read of its lines

    def new_folder(self, data: Path) -> Path:
        """A name for a new run folder (not made yet): the date, the time and the data folder's name."""
        stem = safe_name(Path(data).name, "data", max_chars=40, dots=False)
        name = f"{RUN_PREFIX}{time.strftime('%Y%m%d-%H%M%S')}-{stem}"
        path, n = self.root / name, 1
        while path.exists():
            n += 1
            path = self.root / f"{name}-{n}"
        return path

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, fields: dict) -> str:
        """Start the run that ``fields`` (the trainer's settings as JSON fields; ``out`` a new folder
        under the runs folder) describe; refused while another runs. Returns the run's name."""
        out = Path(fields["out"])
        if out.parent.resolve() != self.root.resolve():
            raise FinetuneInputError("finetune.error.outside_runs")
        with self._lock:
            if self.running():
                raise FinetuneInputError("finetune.error.busy", name=self._current.name if self._current else "")
            out.mkdir(parents=True, exist_ok=False)
            _beside(out, ASKED_SUFFIX).write_text(json.dumps(fields, indent=1), encoding="utf-8")
            with open(_beside(out, LOG_SUFFIX), "wb") as log:
                self._process = subprocess.Popen(
                    [self.python, "-m", "webui.jobs.finetune_worker", json.dumps(fields)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=PROJECT,
                    env=os.environ | {"PYTHONUNBUFFERED": "1"},
                )
            self._current, self._stopping, self._started = out, False, time.monotonic()
        logger.info("fine-tuning run %s started (process %d)", out.name, self._process.pid)
        return out.name

    def stop(self) -> bool:
        """Ask the running process to stop after its current step (it exports what it has); False
        when none runs."""
        with self._lock:
            if not self.running():
                return False
            assert self._process is not None
            self._process.send_signal(signal.SIGTERM)
            self._stopping = True
        logger.info("fine-tuning run %s: stop asked", self._current.name if self._current else "?")
        return True

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop a running process and wait for it (the server is stopping)."""
        if self.stop() and self._process is not None:
            try:
                self._process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._process.kill()

    def latest(self) -> Path | None:
        """The run in progress, else the newest run folder (by its name: date and time)."""
        if self._current is not None and self._current.is_dir():
            return self._current
        if not self.root.is_dir():
            return None
        runs = sorted(p for p in self.root.iterdir() if p.is_dir() and p.name.startswith(RUN_PREFIX))
        return runs[-1] if runs else None

    def folder(self, name: str) -> Path | None:
        """The run folder called ``name`` (only a run folder right under the runs folder)."""
        if not name or "/" in name or "\\" in name or not name.startswith(RUN_PREFIX):
            return None
        path = self.root / name
        return path if path.is_dir() else None

    def state(self) -> RunState:
        """The latest run as the page shows it."""
        with self._lock:
            run = self.latest()
            if run is None:
                return RunState("", NONE)
            alive = run == self._current and self.running()
            stopping = alive and self._stopping
            progress = self._progress.setdefault(run.name, Progress())
            progress.read(run / PROGRESS_FILE)
            since = time.monotonic() - self._started if alive else 0.0
        result = _json(run / RESULT_FILE)
        steps = int(progress.last.get("steps") or _json(_beside(run, ASKED_SUFFIX)).get("steps") or 0)
        last = progress.last
        step = int(last.get("step") or 0)
        elapsed = float(last.get("elapsed_s") or since)
        has_model = (run / MODEL_FOLDER / "config.json").is_file()
        if alive:
            status = STOPPING if stopping else RUNNING
            message = ""
        elif result.get("status") in (DONE, STOPPED, FAILED):
            status, message = result["status"], str(result.get("message") or "")
        else:
            status, message = ENDED, _tail(_beside(run, LOG_SUFFIX))
        return RunState(run.name, status, steps, step, progress, elapsed, message, has_model, result, run)


def _json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _tail(path: Path) -> str:
    """The last lines of a run's log: why a process ended without a result."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[-3:])[-LOG_TAIL_CHARS:]


def held_out_clip(run: Path, folder: Path) -> Path | None:
    """A copy in ``folder`` (a request folder) of the run's first held-out clip as the trainer kept it
    (``samples/reference/<id>.wav``, 24 kHz); None when there is none."""
    references = run / SAMPLES_FOLDER / REFERENCE_FOLDER
    ids = _json(run / SPLIT_FILE).get("val") or []
    named = [references / f"{clip}.wav" for clip in ids if isinstance(clip, str) and "/" not in clip]
    for path in [*named, *sorted(references.glob("*.wav"))]:
        if path.is_file() and not path.is_symlink():
            target = folder / f"held_out_{path.name}"
            shutil.copyfile(path, target)
            return target
    return None


def sample_files(run: Path, progress: Progress) -> tuple[Path, Path] | None:
    """(the held-out clip's original, its latest decoding) as the trainer wrote them under the run, or None."""
    step, relative = progress.sample
    if step < 0 or not progress.sample_clip or "/" in progress.sample_clip:
        return None
    base = run.resolve()
    decoded = (run / relative).resolve()
    original = run / SAMPLES_FOLDER / REFERENCE_FOLDER / f"{progress.sample_clip}.wav"
    if not decoded.is_relative_to(base) or not decoded.is_file() or not original.is_file():
        return None
    return original, decoded


def _beside(run: Path, suffix: str) -> Path:
    """The page's own file for ``run``, beside its folder (the trainer wants the folder to itself)."""
    return run.with_name(run.name + suffix)
