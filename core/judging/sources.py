"""The versions of one clip that a listener compares: its sources.

The original, the codec's reconstruction, a second checkpoint's, ladder levels (the first k
codebooks) and the anchors (``core.anchors``) are all sources: each has an id, a kind, an English
label, a player key and a bitrate, and is sample-aligned with the original at one common rate
(``core.audio.rates``: 24 kHz, or 48 kHz when a 48 kHz decoder is among them; each source says its rate). The player, the metrics
table, the blind test, the reports and the CLI all take this one list.

The source catalogue (:func:`entry`) gives every source id, the residual's too, what does not change
from clip to clip: its kind, a short label the same in every language (checkboxes, dropdowns), the
locale key of its name and a familiarity rank (which reference codec people know best). An anchor's
come from its row in ``core.anchors.catalog``; an id nothing knows gets safe defaults (its id as the
label, unranked), so a new anchor without them never stops the page from building.

:func:`make_sources` runs a clip through the codec (and the second checkpoint when one is loaded,
under the same lock) and makes the chosen anchors; :func:`write_sources` writes them, every file on
the 16-bit grid (``core.audio.files.write_pcm16``). They are the one producer and the one writer of a
round trip's sources: ``python -m core roundtrip``, the folder evaluation, the web page's round trip
(``webui.jobs.codec``, ``webui.jobs.compare``) and a Live session's result (``webui.jobs.live``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core import anchors as core_anchors
from core.audio import rates
from core.audio.files import write_pcm16
from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, bitrate_bps
from core.model.results import RoundTripResult

CODEC_BPS = bitrate_bps()  # the codec's bitrate with every codebook (core.codec)
ORIGINAL, CODEC, CHECKPOINT, LEVEL, ANCHOR = "original", "codec", "checkpoint", "level", "anchor"  # Source.kind
RESIDUAL = "residual"  # the kind (and id) of original − reconstruction in the player
ORIGINAL_ID, CODEC_ID, COMPARE_ID = (
    "original",
    "reconstruction",
    "compare",
)  # ids of the original, the codec's, the second checkpoint's
RESIDUAL_ID = RESIDUAL
COMPARE_KEY = "c"  # the second checkpoint's key in the player
UNRANKED = 0  # SourceEntry.familiarity of a source nobody ranked
FILE_NAMES = {ORIGINAL_ID: "{stem}_24k_mono.wav", CODEC_ID: "{stem}_reconstruction.wav"}  # others: {stem}_{id}.wav


@dataclass(frozen=True)
class SourceEntry:
    id: str  # "original", "reconstruction", "residual", "compare", "k4", "opus6", ...
    kind: str  # ORIGINAL, CODEC, RESIDUAL, CHECKPOINT, LEVEL or ANCHOR
    short: str  # short label, the same in every language: "Opus 6 kbit/s", "② 2.2 kbit/s", "k = 4"
    key: str  # the locale key of its name ("compare.source.opus6"; levels: "lab.source.level" with k, bitrate)
    familiarity: int = UNRANKED  # 1: the best known reference codec; UNRANKED: not ranked


def entry(source_id: str) -> SourceEntry:
    """The catalogue's row of ``source_id``; an unknown id gets safe defaults (an anchor kind,
    its id as its short label, unranked)."""
    fixed = {
        ORIGINAL_ID: SourceEntry(ORIGINAL_ID, ORIGINAL, "original", "compare.source.original"),
        CODEC_ID: SourceEntry(CODEC_ID, CODEC, f"{CODEC_BPS / 1000:g} kbit/s", "compare.source.reconstruction"),
        RESIDUAL_ID: SourceEntry(RESIDUAL_ID, RESIDUAL, "residual", "lab.source.residual"),
        COMPARE_ID: SourceEntry(COMPARE_ID, CHECKPOINT, f"② {CODEC_BPS / 1000:g} kbit/s", "compare.source.compare"),
    }
    if source_id in fixed:
        return fixed[source_id]
    if source_id[:1] == "k" and source_id[1:].isdigit() and 1 <= int(source_id[1:]) <= NUM_CODEBOOKS:
        return SourceEntry(source_id, LEVEL, f"k = {int(source_id[1:])}", "lab.source.level")
    a = core_anchors.BY_ID.get(source_id)
    if a is None:
        return SourceEntry(source_id, ANCHOR, source_id, f"compare.source.{source_id}")
    return SourceEntry(a.id, ANCHOR, a.short or a.label or a.id, f"compare.source.{a.id}", a.familiarity)


def short_label(source_id: str) -> str:
    """The source's short label (the same in every language)."""
    return entry(source_id).short


def familiar_first(source_ids) -> list[str]:
    """``source_ids`` with the ranked ones first, best known first, then the unranked in the given order."""
    ids = list(source_ids)
    ranked = sorted((i for i in ids if entry(i).familiarity != UNRANKED), key=lambda i: entry(i).familiarity)
    return ranked + [i for i in ids if entry(i).familiarity == UNRANKED]


@dataclass(frozen=True)
class Source:
    id: str  # "original", "reconstruction", "compare", "k4", "opus6", ...
    kind: str  # ORIGINAL, CODEC, CHECKPOINT, LEVEL or ANCHOR
    label: str  # English, e.g. "Opus 6 kbit/s" (the page words it in the reader's language by id)
    key: str  # keyboard key in the flip player ("" for none)
    bitrate_bps: float | None  # codes or encoded bytes per second (None: the original, a filter)
    samples: np.ndarray | None = field(default=None, repr=False, compare=False)  # float32 mono, aligned
    rate_hz: int = SAMPLE_RATE  # the samples' rate: the comparison rate of its set (core.audio.rates)
    made_at_hz: int = SAMPLE_RATE  # the rate it was made at (a 48 kHz decoder's 48000), before that

    def facts(self) -> dict:
        """Everything but the samples (for JSON, the manifest, the tables)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "label": self.label,
            "key": self.key,
            "bitrate_bps": self.bitrate_bps,
            "made_at_hz": self.made_at_hz,
        }

    def at(self, rate_hz: int, length: int) -> Source:
        """This source at ``rate_hz``, ``length`` samples long (resampled from its own rate)."""
        samples = rates.to_rate(self.samples, self.rate_hz, rate_hz, length)
        return dataclasses.replace(self, samples=samples, rate_hz=rate_hz)


def original(samples=None, rate_hz: int = SAMPLE_RATE) -> Source:
    return Source(ORIGINAL_ID, ORIGINAL, "original", "a", None, samples, rate_hz, rate_hz)


def codec(samples=None, rate_hz: int = SAMPLE_RATE) -> Source:
    """The codec's reconstruction at the rate its decoder wrote (``rate_hz``)."""
    return Source(CODEC_ID, CODEC, f"codec {CODEC_BPS / 1000:g} kbit/s", "b", CODEC_BPS, samples, rate_hz, rate_hz)


def checkpoint(samples=None, rate_hz: int = SAMPLE_RATE) -> Source:
    """The second checkpoint's reconstruction at the rate its decoder wrote."""
    label = f"second checkpoint {CODEC_BPS / 1000:g} kbit/s"
    return Source(COMPARE_ID, CHECKPOINT, label, COMPARE_KEY, CODEC_BPS, samples, rate_hz, rate_hz)


def level(codebooks: int, samples=None, key: str = "") -> Source:
    rate = bitrate_bps(codebooks)
    return Source(
        f"k{codebooks}", LEVEL, f"first {codebooks} of {NUM_CODEBOOKS} codebooks, {rate:g} bit/s", key, rate, samples
    )


def anchor(made: core_anchors.AnchorAudio) -> Source:
    a = made.anchor
    return Source(a.id, ANCHOR, a.label, a.key, made.bitrate_bps, made.samples)


@dataclass(frozen=True)
class SourceSet:
    original: Source
    sources: tuple[Source, ...]  # the codec first, then the second checkpoint, then the anchors
    problems: tuple[core_anchors.Problem, ...]  # anchors that could not be made, and why
    trip: RoundTripResult  # the codec's: codes, reconstruction, timings
    second_trip: RoundTripResult | None  # the second checkpoint's, when one is loaded
    agreement: list[float] | None  # share of codes equal per codebook, first model against second
    timing: dict  # model_s, anchors_s
    band: rates.Band = rates.Band(SAMPLE_RATE, SAMPLE_RATE / 2)  # the common rate, the original's real band

    @property
    def rate_hz(self) -> int:
        """The rate every source of the set is at (what the player plays and the metrics compare)."""
        return self.band.rate_hz

    def by_id(self, source_id: str) -> Source:
        return next(s for s in (self.original, *self.sources) if s.id == source_id)


def comparison_rate_of(engine, compare: bool = True) -> int:
    """The rate a round trip's sources will be compared at with this engine (and its second checkpoint
    when ``compare`` and one is ready): the highest output rate, at least 24 kHz."""
    from core.model import second

    other = second.ready_second(engine) if compare else None
    return rates.comparison_rate([engine.output_rate] + ([other.output_rate] if other is not None else []))


def audio_limits_for(engine, compare: bool = True, limits=None):
    """``limits`` (the engine's by default), keeping a file above 24 kHz at the comparison rate when that is
    above 24 kHz. The duration and size limits apply before the model is needed: an engine not loaded yet
    reads its file at the input rate (the model work that follows says it is not ready)."""
    chosen = limits or engine.settings.audio_limits()
    if getattr(engine, "output", None) is None:
        return chosen
    return rates.limits_keeping(chosen, comparison_rate_of(engine, compare))


def make_sources(
    engine,
    audio,
    anchors: Iterable[core_anchors.Anchor],
    compare: bool = True,
    progress: Callable[[float], None] | None = None,
) -> SourceSet:
    """``audio`` (core.audio.files.Audio) through the codec, the second checkpoint (when ``compare``
    and one is ready) and each of ``anchors``, all at the comparison rate (the highest decoder's, at least
    24 kHz; the original from the file's own samples where ``audio.kept`` holds them at that rate).
    Progress: the model work up to 0.9, the anchors after."""
    from core.model import second

    report = progress or (lambda f: None)
    x = np.asarray(audio.samples, dtype=np.float32)
    other = second.ready_second(engine) if compare else None
    if other is not None:
        both = second.roundtrip_both(engine, audio, lambda f: report(0.9 * f))
        trip, second_trip, agreement = both.first, both.second, both.agreement()
    else:
        trip, second_trip, agreement = engine.roundtrip(audio, lambda f: report(0.9 * f)), None, None
    started = time.perf_counter()
    # outside the lock: at a lower priority while a live session runs (core.model.cpu_share)
    made, problems = engine.live.cpu.batch(anchor_sources, x, anchors, lambda f: report(0.9 + 0.1 * f))
    decoded = [(codec, trip)] + ([(checkpoint, second_trip)] if second_trip is not None else [])
    rate = rates.comparison_rate(t.decoded.sample_rate for _, t in decoded)
    reference, band = rates.original_at(audio, rate)
    length = reference.size
    made_here = [make(t.decoded.samples, t.decoded.sample_rate) for make, t in decoded]
    sources = [s.at(rate, length) for s in (*made_here, *made)]
    model_s = sum(t.encoded.seconds + t.decoded.seconds for _, t in decoded)
    timing = {"model_s": model_s, "anchors_s": time.perf_counter() - started}
    kept = original(reference, rate)
    return SourceSet(kept, tuple(sources), problems, trip, second_trip, agreement, timing, band)


def anchor_sources(
    samples, anchors: Iterable[core_anchors.Anchor], progress: Callable[[float], None] | None = None
) -> tuple[list[Source], tuple[core_anchors.Problem, ...]]:
    """The ``anchors`` of ``samples`` (the original, 24 kHz mono) as sources, and those that could not
    be made with why (a round trip's, and an anchor ticked on a result already on the page)."""
    made = core_anchors.make_anchors(np.asarray(samples, dtype=np.float32), anchors, progress or (lambda f: None))
    return [anchor(a) for a in made.made], made.problems


def file_name(stem: str, source_id: str) -> str:
    """A source's WAV in a result folder: ``{stem}_24k_mono.wav``, ``{stem}_reconstruction.wav``,
    ``{stem}_{id}.wav``."""
    return FILE_NAMES.get(source_id, "{stem}_{id}.wav").format(stem=stem, id=source_id)


def write_sources(listed: Iterable[Source], path_of: Callable[[Source], Path]) -> dict[str, Path]:
    """The one writer of the files a listener hears: each source at ``path_of(source)``, on the 16-bit
    grid (``core.audio.files.write_pcm16``: what is measured from the file is what is played), never
    over an existing file. Source id -> its WAV."""
    return {s.id: write_pcm16(path_of(s), s.samples, s.rate_hz) for s in listed}


def agreement_rows(agreement: list[float] | None) -> list[dict]:
    """Per codebook: its number (1 is the semantic one) and the share of codes equal."""
    return [{"codebook": i, "equal_share": round(v, 4)} for i, v in enumerate(agreement or [], start=1)]
