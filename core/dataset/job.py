"""One tokenize job end to end: read the input, run the pipeline, write the manifest and exports."""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path

from core.dataset.export import run_record, write_outputs
from core.dataset.inputs import AUDIO_FIELD, read_inputs
from core.dataset.pipeline import TokenizeOptions, job_record, run
from core.dataset.progress import Progress
from core.settings import Settings

logger = logging.getLogger(__name__)


def tokenize(
    source: Path,
    out: Path,
    settings: Settings,
    options: TokenizeOptions | None = None,
    *,
    jsonl: bool = False,
    audio_column: str = AUDIO_FIELD,
    show_progress: bool = True,
) -> dict:
    """Tokenize ``source`` into ``out`` (resuming a job already there); return the manifest."""
    from core.tokens import package_versions

    out = Path(out)
    options = options or TokenizeOptions()
    inputs = read_inputs(Path(source), audio_column)
    logger.info("%s input: %d rows, %d without audio", inputs.kind, inputs.count, len(inputs.errors))
    job = job_record(inputs, settings, options, str(Path(source).resolve()))
    progress = Progress(show=show_progress)
    try:
        result = run(
            inputs, out, settings, options, job, package_versions(), on_result=progress, on_start=progress.start
        )
    finally:
        progress.close()
    return write_outputs(out, job, settings.to_dict(), asdict(options), run_record(result), jsonl)
