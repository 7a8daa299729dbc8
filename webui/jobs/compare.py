"""The comparison's work, without Gradio: the sources beside the codec (anchors, the second
checkpoint) written as WAVs in the request folder, and the one table of every source.

A source travels between events (and to and from API callers) as a dict: ``id``, ``kind``,
``label``, ``key``, ``bitrate_bps`` and ``wav`` (its file in a request folder; not ``path``, which
Gradio would take for a file of its own and copy, and gradio_client replace by a download). Paths that come back
from a client are believed only inside the app's request folders (``webui.tabs.compare.checked_sources``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core import anchors, tokens
from core.analysis.judges import DEFAULT_JUDGES, Judges
from core.audio import rates
from core.audio.files import load_audio
from core.judging import placing, source_table, sources
from core.model import second
from core.settings import AudioLimits
from webui.jobs import finetune_runs
from webui.jobs.common import Progress, quiet

WAV = "wav"  # a source dict's file (in JSON that reaches clients)
CACHE_ENTRIES = 64  # measured columns remembered (the table grows when the ladder adds levels)
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


NO_SECOND = "no_second"  # a problem's reason: the second checkpoint was asked for and none is ready


@dataclass(frozen=True)
class ExtraSources:
    sources: list[dict]  # the second checkpoint's and the anchors', as source dicts with their WAV paths
    problems: list[dict]  # sources that could not be made (anchors; a second checkpoint asked for): id, reason, message
    agreement: list[dict]  # per codebook: share of codes equal, first model against second (empty: none)
    token_file: Path | None  # the second checkpoint's codes
    timing: dict  # compare_s (the second model), anchors_s


def missing_second(engine, chosen) -> list[dict]:
    """The problem to list when ``chosen`` asks for the second checkpoint and none is ready."""
    if sources.COMPARE_ID not in (chosen or []) or second.ready_second(engine) is not None:
        return []
    state, error = second.not_ready(engine)
    return [
        {
            "id": sources.COMPARE_ID,
            "reason": NO_SECOND,
            "state": state,  # second.LOADING, FAILED or NONE: the page says which (compare_view)
            "error": error,
            "message": second.not_ready_message(engine),  # core's English for logs and the API
        }
    ]


def checkpoint_name(model: str) -> str:
    """Which second checkpoint, in a word: its folder's name; a fine-tuning run's export (``RUN/final``)
    by its run's name."""
    path = Path(model)
    if path.name == finetune_runs.MODEL_FOLDER and path.parent.name.startswith(finetune_runs.RUN_PREFIX):
        return path.parent.name
    return path.name


def page_sources(engine, made: sources.SourceSet, chosen, written: dict[str, Path], folder: Path, stem: str):
    """The sources beside the codec of a round trip ``core.judging.sources.make_sources`` made and
    ``write_sources`` wrote (``written``: id -> WAV), as the page carries them: source dicts, the
    problems (an anchor that could not be made, a second checkpoint asked for and not ready), the
    second checkpoint's codes and their agreement with the first's."""
    out: list[dict] = []
    agreement: list[dict] = []
    token_path = None
    for source in made.sources:
        if source.id == sources.CODEC_ID:
            continue
        facts = source.facts() | {WAV: str(written[source.id])}
        if source.id == sources.COMPARE_ID and made.second_trip is not None:
            other = second.ready_second(engine)
            model = other.settings.model if other is not None else ""
            folder_name = checkpoint_name(str(model))
            facts = source.facts() | {WAV: str(written[source.id]), "label": folder_name or source.id}
            encoded, rate = made.second_trip.encoded, made.second_trip.decoded.sample_rate
            token_file = tokens.make_token_file(encoded.codes, encoded.original_samples, model, decoder_rate_hz=rate)
            token_path = tokens.save_tokens(token_file, folder / f"{stem}_{sources.COMPARE_ID}_tokens.npz")
            agreement = sources.agreement_rows(made.agreement)
        out.append(facts)
    trip = made.second_trip
    timing = {
        "compare_s": trip.encoded.seconds + trip.decoded.seconds if trip is not None else 0.0,
        "anchors_s": made.timing["anchors_s"],
    }
    problems = missing_second(engine, chosen) + [p.to_dict() for p in made.problems]
    return ExtraSources(out, problems, agreement, token_path, timing)


def anchors_of(samples: np.ndarray, chosen, folder: Path, stem: str) -> ExtraSources:
    """The ``chosen`` anchors of ``samples`` (an original, 24 kHz mono), made and written as
    ``{stem}_{id}.wav`` into ``folder`` by core's one producer and writer."""
    started = time.perf_counter()
    made, problems = sources.anchor_sources(samples, anchors.parse_anchors(list(chosen or [])))
    written = sources.write_sources(made, lambda s: folder / sources.file_name(stem, s.id))
    out = [s.facts() | {WAV: str(written[s.id])} for s in made]
    timing = {"compare_s": 0.0, "anchors_s": time.perf_counter() - started}
    return ExtraSources(out, [p.to_dict() for p in problems], [], None, timing)


def add_anchors(original_wav: Path, chosen: list[str], folder: Path, limits: AudioLimits) -> ExtraSources:
    """The ``chosen`` anchors of a round trip's original (its 24 kHz mono WAV), made now and written
    into ``folder``: the result on screen gains them without encoding the clip again."""
    samples = load_audio(original_wav, limits).samples
    stem = Path(original_wav).stem.removesuffix("_24k_mono")
    return anchors_of(samples, [c for c in chosen if c != sources.COMPARE_ID], folder, stem)


@dataclass(frozen=True)
class TableOutput:
    table: dict  # SourceTable.to_dict()
    placing: dict  # Placing.to_dict()
    seconds: float


def table_of(
    original_path: Path,
    listed: list[dict],
    limits: AudioLimits,
    device: str,
    random_weights: bool,
    mos: bool = True,
    progress: Progress = quiet,
    judges: Judges = DEFAULT_JUDGES,
) -> TableOutput:
    """The table of every listed source (checked source dicts) against the original, and where the
    codec stands among them. Columns measured before are taken from a cache."""
    started = time.perf_counter()
    wavs = [Path(item[WAV]) for item in listed if item["kind"] != sources.ORIGINAL]
    rate = rates.rate_of_files([original_path, *wavs])  # every source at one rate (48 kHz beside a 48 kHz decoder)
    original = sources.original(rates.read_at(original_path, limits, rate), rate)
    items = []
    for item in listed:
        if item["kind"] == sources.ORIGINAL:
            continue
        samples = rates.read_at(Path(item[WAV]), limits, rate)
        facts = (item["id"], item["kind"], item["label"], item["key"], item["bitrate_bps"])
        items.append(sources.Source(*facts, samples, rate, int(item.get("made_at_hz") or rate)))
    with _CACHE_LOCK:
        cache = dict(_CACHE)
    table = source_table.measure(
        original, items, device, mos, lambda f: progress(0.1 + 0.85 * f, "compare.job.table"), cache, judges
    )
    with _CACHE_LOCK:
        _CACHE.update(cache)
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.pop(next(iter(_CACHE)))
    subject = sources.CODEC_ID if any(i.id == sources.CODEC_ID for i in items) else None
    placed = placing.place(table, subject, random_weights) if subject else None
    return TableOutput(
        table.to_dict(),
        placed.to_dict() if placed else {"placements": [], "sentence": "", "random_weights": random_weights},
        time.perf_counter() - started,
    )
