"""The decode side of the inputs: each item's audio read where it sits and decoded with the engine's
readers and limits. The read itself is the input format's read half, beside its index half: a file
(:mod:`core.dataset.audio_files`), a Parquet row group or an Arrow record batch
(:mod:`core.dataset.parquet_arrow`), a tar member at its offset (:mod:`core.dataset.webdataset`);
which one is told by the keys the item's JSON locator holds.

A decode task gets the rows of one table chunk together (``core.dataset.order`` groups them), so a
Parquet row group or an Arrow batch is read once per task, never the whole file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

from core.audio.blocks import Audio
from core.dataset import audio_files, parquet_arrow, webdataset
from core.settings import AudioLimits


def decode_items(paths: list[str], locators: list[str], limits: AudioLimits) -> Iterator[tuple[Audio | None, str, str]]:
    """(audio or None, sha256 of the audio's bytes, reason) for each item, in order."""
    from core.audio.files import load_audio_bytes

    tables: dict[tuple, list] = {}  # (file, chunk, column) -> that chunk's audio cells
    for path, locator in zip(paths, locators, strict=True):
        try:
            if not locator:
                audio, sha256 = audio_files.read_file(path, limits)
                yield audio, sha256, ""
                continue
            where = json.loads(locator)
            if "offset" in where:
                data, name = webdataset.read_member(path, where, limits)
            else:
                data, name = parquet_arrow.read_cell(path, where, tables, limits)
            yield load_audio_bytes(data, name, limits), hashlib.sha256(data).hexdigest(), ""
        except Exception as e:  # noqa: BLE001 - a bad row never stops the job: its reason goes to errors.jsonl
            yield None, "", _reason(e)


def _reason(e: Exception) -> str:
    from core.errors import CodecError

    return str(e) if isinstance(e, (CodecError, OSError)) else f"{type(e).__name__}: {e}"
