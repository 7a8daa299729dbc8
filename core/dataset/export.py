"""What a finished job leaves beside its shards: ``manifest.json``, ``errors.jsonl``, the dataset card
``README.md`` (:mod:`core.dataset.card`) and, with ``--jsonl``, the Qwen3-TTS fine-tuning JSONL.

The fine-tuning JSONL is what the official ``finetuning/prepare_data.py`` writes: each input row
with every field kept and ``audio_codes`` added as a list of frames, each a list of 16 ints, which
``finetuning/dataset.py`` reads with ``torch.tensor(audio_codes, dtype=torch.long)`` as (frames, 16).
All three files are derived from the shards, so a resumed job rewrites them whole (atomically).
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict
from pathlib import Path

from core.codec import FRAME_RATE, NUM_CODEBOOKS
from core.dataset.card import CARD_FILE, dataset_card
from core.dataset.fields import row_fields
from core.dataset.shards import atomic_write_text, codes_of, read_errors, read_shards, shard_fields

logger = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"  # files, hours, errors, settings, timings
ERRORS_FILE = "errors.jsonl"  # one line per input that has no codes, with its reason
JSONL_FILE = "finetune.jsonl"  # --jsonl: the fine-tuning format with audio_codes
SECONDS_PER_HOUR = 3600.0  # for audio hours
LIST_SKIPPED_LIMIT = 20  # skipped files named in the card; --list-skipped writes them all


def write_outputs(
    out: Path, job: dict, settings: dict, options: dict, run: dict, jsonl: bool, inputs: dict | None = None
) -> dict:
    """Write manifest.json, errors.jsonl and README.md (and the JSONL export); return the manifest.
    ``inputs``: what the input held besides its rows (skipped files, columns not copied)."""
    frames = rows = 0
    audio_s = 0.0
    shards = 0
    for table in read_shards(out, columns=["frames", "duration_s"]):
        shards += 1
        rows += table.num_rows
        frames += int(sum(table.column("frames").to_pylist()))
        audio_s += float(sum(table.column("duration_s").to_pylist()))
    errors = read_errors(out)
    atomic_write_text(out / ERRORS_FILE, "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors))
    previous = _previous_runs(out)
    manifest = {
        "job": job,
        "files": {"total": job["items"], "encoded": rows, "errors": len(errors)},
        "audio": {"seconds": audio_s, "hours": audio_s / SECONDS_PER_HOUR},
        "codes": {"frames": frames, "codebooks": NUM_CODEBOOKS, "frame_rate": FRAME_RATE, "dtype": "int16"},
        "shards": shards,
        "input": inputs or {},
        "fields": shard_fields(out),
        "settings": {"engine": settings, "pipeline": options},
        "timings": {"runs": previous + [run], "wall_s": sum(r["wall_s"] for r in previous + [run])},
        "outputs": {"errors": ERRORS_FILE, "jsonl": JSONL_FILE if jsonl else None, "card": CARD_FILE},
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if jsonl:
        _, nulls = export_jsonl(out, out / JSONL_FILE)
        if nulls:
            outputs: dict = manifest["outputs"]  # type: ignore[assignment]
            outputs["jsonl_note"] = (
                f"{nulls} field value(s) that were NaN or infinite (not JSON) are null in {JSONL_FILE}"
            )
    atomic_write_text(out / MANIFEST_FILE, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out / CARD_FILE, dataset_card(manifest, errors))
    return manifest


def _previous_runs(out: Path) -> list[dict]:
    path = out / MANIFEST_FILE
    if not path.exists():
        return []
    try:
        return list(json.loads(path.read_text())["timings"]["runs"])
    except (ValueError, KeyError, TypeError):
        logger.warning("%s is unreadable; earlier runs' timings are dropped", path)
        return []


OURS_IN_JSONL = ("audio", "audio_codes")  # what the fine-tuning JSONL's rows hold besides the input's fields


def finetune_rows(out: Path):
    """Rows of the fine-tuning JSONL in input order: the row's fields + ``audio_codes``. An input
    field named like one of ours keeps its shard column's name (``input_audio_codes``), as in the
    Parquet shards: an input field is never silently replaced."""
    meta = shard_fields(out)
    renamed = meta.get("renamed", {})
    for table in read_shards(out, columns=["audio", "audio_codes", *meta.get("fields", [])]):
        audio = table.column("audio").to_pylist()
        for row in range(table.num_rows):
            fields = row_fields(table, row, meta)
            fields = {(renamed[k] if k in OURS_IN_JSONL and k in renamed else k): v for k, v in fields.items()}
            yield {"audio": audio[row], **fields, "audio_codes": codes_of(table, row).tolist()}


def export_jsonl(out: Path, path: Path) -> tuple[Path, int]:
    """Write the fine-tuning JSONL (standard JSON: a NaN or infinite value is null, and counted)
    through a temporary file and an atomic rename; (the path, values made null)."""
    tmp = path.with_name(f".{path.name}.tmp")
    nulls = [0]
    with open(tmp, "w", encoding="utf-8") as f:
        for row in finetune_rows(out):
            f.write(json.dumps(standard_json(row, nulls), ensure_ascii=False, allow_nan=False) + "\n")
    tmp.replace(path)
    if nulls[0]:
        logger.warning("%d NaN or infinite field value(s) written as null in %s", nulls[0], path.name)
    return path, nulls[0]


def standard_json(value, nulls: list[int]):
    """``value`` with every NaN or infinite float replaced by None (``nulls[0]`` counts them): JSON has
    no NaN, and strict parsers refuse Python's ``NaN`` / ``Infinity``."""
    if isinstance(value, float) and not math.isfinite(value):
        nulls[0] += 1
        return None
    if isinstance(value, dict):
        return {k: standard_json(v, nulls) for k, v in value.items()}
    if isinstance(value, list):
        return [standard_json(v, nulls) for v in value]
    return value


def run_record(result) -> dict:
    """One run's entry in manifest.json's timings."""
    record = asdict(result)
    record.update(
        files_per_s=result.files / max(result.wall_s, 1e-9),
        audio_hours_per_s=result.audio_s / SECONDS_PER_HOUR / max(result.wall_s, 1e-9),
    )
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return record
