"""One tokenize job end to end: read the input, run the pipeline, write the manifest, card and exports."""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path

from core.dataset.export import run_record, write_outputs
from core.dataset.inputs import read_inputs
from core.dataset.pipeline import OnResult, TokenizeOptions, job_record, run
from core.dataset.progress import Progress
from core.dataset.rows import AUDIO_FIELD, Inputs
from core.settings import Settings

logger = logging.getLogger(__name__)


def tokenize(
    source: Path | str,
    out: Path,
    settings: Settings,
    options: TokenizeOptions | None = None,
    *,
    jsonl: bool = False,
    audio_column: str = AUDIO_FIELD,
    data_root: Path | None = None,
    show_progress: bool = True,
    list_skipped: Path | None = None,
    on_result: OnResult | None = None,
) -> dict:
    """Tokenize ``source`` into ``out`` (resuming a job already there); return the manifest.
    ``data_root``: the folder every path a row names must lie in (default: the input's own folder);
    ``list_skipped``: a file to write the folder's skipped files to, one per line; ``on_result``: called
    after each row's result (besides the progress bar)."""
    from core.tokens import package_versions

    out = Path(out)
    options = options or TokenizeOptions()
    inputs = read_inputs(source, audio_column, data_root, exclude=out)
    logger.info("%s input: %d rows, %d without audio", inputs.kind, inputs.count, len(inputs.errors))
    if list_skipped is not None:
        Path(list_skipped).write_text("".join(p + "\n" for p in inputs.skipped_paths), encoding="utf-8")
    job = job_record(inputs, settings, options, str(Path(source).resolve()) if Path(source).exists() else str(source))
    progress = Progress(show=show_progress)

    def observe(result) -> None:
        progress(result)
        if on_result is not None:
            on_result(result)

    try:
        result = run(
            inputs, out, settings, options, job, package_versions(), on_result=observe, on_start=progress.start
        )
    finally:
        progress.close()
    record = run_record(result)
    return write_outputs(
        out, job, settings.to_dict(), asdict(options), record, jsonl, _about(inputs, settings, list_skipped)
    )


def _about(inputs: Inputs, settings: Settings, list_skipped: Path | None) -> dict:
    """What the manifest and card say about the input besides its rows."""
    from core.model.checkpoints import is_random_checkpoint

    return {
        "skipped": inputs.skipped,
        "skipped_list": str(list_skipped) if list_skipped else None,
        "left_out": inputs.left_out,
        "random_weights": is_random_checkpoint(Path(settings.model)),
    }
