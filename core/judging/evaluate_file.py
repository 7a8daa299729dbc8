"""One file of a folder evaluation (``core.judging.evaluate``): its round trip, metrics, DistillMOS and
verdict as one CSV row, or the row with the error that stopped it (a bad file never stops the run).

A decoder that writes above 24 kHz (``core.model.family``) is judged at the comparison rate
(``core.audio.rates``): the original from the file's own samples where it holds more than 24 kHz, the
reconstruction as its decoder wrote it; the reconstruction's WAV keeps the decoder's rate, and the row
says it (``output_rate_hz``).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from core.analysis import catalog, metrics
from core.analysis.judges import Judges
from core.audio import rates
from core.audio.files import load_audio
from core.codec import SAMPLE_RATE
from core.errors import CodecError
from core.judging import paper_table, per_source, sources, verdict
from core.model import second
from core.names import safe_name
from core.settings import AudioLimits

logger = logging.getLogger(__name__)

METRICS = catalog.ids(catalog.COMPARED)  # analysis.compare's ids, in its order
COLUMNS = (
    "file",
    "duration_s",
    "output_rate_hz",
    *METRICS,
    "mos_original",
    "mos_reconstruction",
    "mos_drop",
    "verdict",
    "encode_s",
    "decode_s",
    "metrics_s",
    "mos_s",
    "total_s",
    "reconstruction",
    "error",
)


def display_name(name: str) -> str:
    """A file name as text that can be written anywhere: bytes that are not UTF-8 (kept by Python as
    surrogates) shown as ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _without_paths(text: str, *folders: Path) -> str:
    """An error's words without this machine's folders (a row may be shared)."""
    for folder in folders:
        for spelling in {str(folder), str(Path(folder).resolve())}:
            text = text.replace(spelling + os.sep, "").replace(spelling, ".")
    return text


def evaluate_one(
    engine,
    path: Path,
    name: str,
    out_dir: Path,
    limits: AudioLimits,
    anchors=(),
    output_stem: str | None = None,
    table: list | None = None,
) -> dict:
    """Round trip, metrics, MOS and verdict of one file; the error in the row if any step fails.
    With ``anchors`` or a second checkpoint, the per-source columns too (core.judging.per_source).
    ``output_stem``: the reconstruction's file name without ``.wav`` (unique within the run)."""
    name = display_name(name)
    stem = output_stem or safe_name(name, "audio")
    row: dict = dict.fromkeys(COLUMNS) | {"file": name}
    started = time.perf_counter()
    try:
        rate = sources.comparison_rate_of(engine)
        audio = load_audio(path, rates.limits_keeping(limits, rate))
        row["duration_s"] = audio.samples.size / SAMPLE_RATE
        made = None
        if anchors or second.ready_second(engine) or table is not None:
            made = sources.make_sources(engine, audio, anchors)
            result = made.trip
        else:
            result = engine.roundtrip(audio)
        decoded = result.decoded
        row["encode_s"], row["decode_s"], row["output_rate_hz"] = (
            result.encoded.seconds,
            decoded.seconds,
            decoded.sample_rate,
        )
        sources.write_sources(
            [sources.codec(decoded.samples, decoded.sample_rate)],
            lambda _s: out_dir / "reconstructions" / f"{stem}.wav",
        )
        row["reconstruction"] = f"reconstructions/{stem}.wav"
        reference, _band = rates.original_at(audio, rate)  # both at the comparison rate
        heard = rates.to_rate(decoded.samples, decoded.sample_rate, rate, reference.size)
        t = time.perf_counter()
        judges = Judges.of(engine.settings)
        values = verdict.metric_values(metrics.compare(reference, heard, rate, judges=judges))
        row.update(values)
        row["metrics_s"] = time.perf_counter() - t
        judged = verdict.judge(
            reference, heard, values, rate, engine.device, engine.random_weights, engine.settings.mos_windows
        )
        row.update(
            mos_original=judged.mos_original,
            mos_reconstruction=judged.mos_reconstruction,
            verdict=judged.level,
            mos_s=judged.seconds,
        )
        if judged.mos_original is not None and judged.mos_reconstruction is not None:
            row["mos_drop"] = judged.mos_original - judged.mos_reconstruction
        if made is not None and (anchors or made.second_trip is not None):
            row.update(per_source.row_values(made, engine.device, engine.random_weights, judges))
        if table is not None and made is not None:  # --table: the README's layout (core.judging.paper_table)
            table.append(paper_table.measure(made.original.samples, made.sources, engine.settings.mos_windows, judges))
    except Exception as e:  # noqa: BLE001 - one bad file is a row with its error, never the end of the run
        logger.warning("evaluating %s failed: %s: %s", name, type(e).__name__, e)
        text = str(e) if isinstance(e, CodecError) else f"{type(e).__name__}: {e}"
        row["error"] = display_name(_without_paths(text, out_dir, path.parent))
    row["total_s"] = time.perf_counter() - started
    return row
