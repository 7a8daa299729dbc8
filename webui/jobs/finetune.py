"""The Fine-tune tab's work before a run, without Gradio: which data a run may read (a folder under
the data root, ``--finetune-data-root``, or the example clips), the trainer's settings from the
page's choices, and the plan (``core.training.plan_finetune``: clips, audio seconds, held-out clips,
peak memory, precision). The run itself is ``webui.jobs.finetune_runs``.

A folder is named on the page relative to the data root; whatever is typed is resolved (links
followed) and refused unless it stays inside the root, so the page cannot make the server read
anything else. The example clips are copied into the runs folder once (``example-clips/``): a run
reads a folder, and the package's own folder is never a place a run writes beside.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import CodecError

EXAMPLES = "examples"  # the data choice that means the example clips
EXAMPLE_FOLDER = "example-clips"  # under the runs folder: the example clips a run reads
FOLDER_DEPTH = 2  # levels under the data root the picker offers (a deeper one can be typed)
MAX_FOLDERS = 500  # folders the picker lists at most
PRECISIONS = ("auto", "fp32", "bf16", "fp16")  # core.training's choices; auto: the trainer picks
MIN_STEPS, MAX_STEPS = 1, 100_000  # a run's steps the page accepts
DEFAULT_STEPS = 200
EVALUATIONS = 10  # held-out evaluations in a run (and decoded samples to hear): the curve's held-out points
EXAMPLE_VAL_CLIPS = 1  # the example clips are three: one is held out


class FinetuneInputError(CodecError):
    """A choice on the Fine-tune tab that cannot be used: ``key`` is the catalogue key of its message
    (the tab shows it in the page's language)."""

    def __init__(self, key: str, **fields):
        self.key, self.fields = key, fields
        super().__init__(key)


@dataclass(frozen=True)
class Roots:
    """Where runs may read and write: ``data`` (None: only the example clips), ``runs`` (each run a
    folder of its own in it), ``examples`` (the example clips)."""

    data: Path | None
    runs: Path
    examples: tuple[Path, ...] = ()


def data_folders(root: Path | None) -> list[str]:
    """The folders under ``root`` to ``FOLDER_DEPTH`` levels, as paths relative to it (POSIX
    separators), sorted; hidden ones and links that lead outside it left out."""
    if root is None or not Path(root).is_dir():
        return []
    base = Path(root).resolve()
    found: list[str] = []
    level = [base]
    for _ in range(FOLDER_DEPTH):
        below = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_dir() or not _inside(entry, base):
                    continue
                found.append(entry.relative_to(base).as_posix())
                below.append(entry)
                if len(found) >= MAX_FOLDERS:
                    return sorted(found)
        level = below
    return sorted(found)


def _inside(path: Path, base: Path) -> bool:
    resolved = path.resolve()
    return resolved == base or resolved.is_relative_to(base)


def data_path(choice: str | None, roots: Roots) -> Path:
    """The folder a run reads for the page's ``choice``: the example clips (copied into the runs
    folder), or a folder under the data root (typed relative to it); refused with a catalogue key
    otherwise."""
    text = str(choice or "").strip()
    if text == EXAMPLES:
        return example_folder(roots)
    if not text:
        raise FinetuneInputError("finetune.error.no_data")
    if roots.data is None:
        raise FinetuneInputError("finetune.error.no_data_root")
    base = Path(roots.data).resolve()
    path = (base / text).resolve()  # an absolute path typed replaces the root, and is refused below
    if not path.is_relative_to(base):
        raise FinetuneInputError("finetune.error.outside_root", folder=text)
    if not path.is_dir():
        raise FinetuneInputError("finetune.error.no_folder", folder=text)
    return path


def example_folder(roots: Roots) -> Path:
    """The example clips as a folder of their own under the runs folder (copied once; a copy is
    written beside and renamed, so a run never reads half a file)."""
    if not roots.examples:
        raise FinetuneInputError("finetune.error.no_examples")
    folder = Path(roots.runs) / EXAMPLE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for source in roots.examples:
        target = folder / Path(source).name
        if target.is_file() and target.stat().st_size == Path(source).stat().st_size:
            continue
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        shutil.copyfile(source, partial)
        os.replace(partial, target)
    return folder


def steps_of(value) -> int:
    """The page's steps as an int in range, or refused."""
    try:
        steps = int(float(value))
    except (TypeError, ValueError):
        raise FinetuneInputError("finetune.error.steps", min=MIN_STEPS, max=MAX_STEPS) from None
    if not MIN_STEPS <= steps <= MAX_STEPS:
        raise FinetuneInputError("finetune.error.steps", min=MIN_STEPS, max=MAX_STEPS)
    return steps


def precision_of(value) -> str:
    text = str(value or "auto")
    if text not in PRECISIONS:
        raise FinetuneInputError("finetune.error.precision", value=text)
    return text


def settings_fields(engine, choice, steps, precision, out: Path, roots: Roots, adversarial=None) -> dict:
    """The trainer's settings for the page's choices as plain fields (JSON: the run's process gets
    them so): the data folder, ``out``, the engine's checkpoint and device as the base, the
    discriminators or mel only (``adversarial``); the trainer's defaults for the rest."""
    data = data_path(choice, roots)
    fields: dict = {
        "data": str(data),
        "out": str(out),
        "model": str(getattr(engine, "model_path", None) or engine.settings.model),
        "steps": steps_of(steps),
        "device": str(engine.settings.device),
        "precision": precision_of(precision),
        "eval_every": max(1, steps_of(steps) // EVALUATIONS),
    }
    if adversarial is not None:  # None: the trainer's default (the discriminators join after a warm-up)
        fields["adversarial"] = bool(adversarial)
    if str(choice).strip() == EXAMPLES:
        fields["val_clips"] = EXAMPLE_VAL_CLIPS
    return fields


def settings_of(fields: dict):
    """``core.training.FinetuneSettings`` from :func:`settings_fields`'s fields."""
    from core.training import FinetuneSettings  # torch and the trainer: only where a run is planned or made

    given: dict[str, Any] = {k: Path(v) if k in ("data", "out") else v for k, v in fields.items()}
    return FinetuneSettings(**given)


def plan(fields: dict) -> dict:
    """The run's plan before it starts (``core.training.plan_finetune``), as a dict; a refusal
    raises the trainer's error, whose sentence says what to do."""
    from core.training import plan_finetune

    made = dict(plan_finetune(settings_of(fields)))
    if made.get("val_clips") is None and fields.get("val_clips"):  # held out as asked (else the trainer's share)
        made["val_clips"] = fields["val_clips"]
    return made
