"""The listening lab's work, without Gradio: the flip player's sources (original, reconstruction,
residual, ladder levels) with their loudness-matching gains and the quality timeline, at the rate
of the highest-rate source (``core.audio.rates``: 48 kHz beside a 48 kHz decoder); the codebook ladder
and token usage are ``webui.jobs.lab_ladder``. The Gradio handlers in ``webui.tabs.lab`` wrap these;
bench/lab_overhead.py times them.

The player never gets audio inside the page: it gets a manifest of file paths in the request's
folder and fetches them itself (byte ranges of long files, on demand). Files are written with
exclusive creation into a fresh request folder; nothing the user gave is overwritten.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from core.analysis import timeline
from core.audio import loudness, rates
from core.audio.files import on_grid, write_pcm16
from core.codec import SAMPLE_RATE
from core.judging.sources import CODEC_BPS
from core.settings import AudioLimits
from webui.jobs.common import Progress, quiet, stem_of
from webui.jobs.lab_analysis import analyse as _analyse
from webui.jobs.pcm16_copies import listening_copy

RESIDUAL_GAIN_DB = 0.0  # the residual plays at its own level: what was lost, as loud as it was lost
PREFETCH = ("original", "reconstruction")  # fetched ahead from the start; the others once chosen
START = "reconstruction"  # the source a new result's player plays first: the codec, not the original
LADDER_KEYS = "123456789"  # keyboard keys of the ladder levels k = 1..9 in the player (the key is k)


@dataclass(frozen=True)
class Source:
    id: str  # "original", "reconstruction", "residual", "k4", ...
    key: str  # keyboard key that selects it in the player
    label: str  # what it is, in English ("original", "k4"); the page words it in the reader's language
    path: str  # WAV in a request folder (served by Gradio's file route)
    gain_db: float  # applied in the player so that it matches the original's integrated loudness
    lufs: float | None  # its integrated loudness (None: too short or silent)
    kind: str = ""  # original, codec, residual, checkpoint, anchor or level (core.judging.sources)
    bitrate_bps: float | None = None  # of its codes or encoded bytes (None: the original, residual, a filter)
    envelope: dict | None = None  # timeline.waveform_envelope: the player draws the source that plays


@dataclass(frozen=True)
class TimelineOutput:
    manifest: dict  # the player's sources, timeline and waveform envelope (JSON)
    timeline: dict  # core.analysis.timeline.Timeline.to_dict()
    seconds: float  # our wall time


@dataclass(frozen=True)
class LadderOutput:
    manifest: dict  # the player's sources with the ladder levels added
    rows: list[dict]  # per level: codebooks, bitrate, metrics, gain, files
    spectrograms: list[tuple[str, str]]  # (PNG path, caption): the original's first, then one per level
    timing: dict  # model_s (encode + decodes), ui_s (everything else), total_s


def load_at(path: Path, limits: AudioLimits, rate_hz: int = SAMPLE_RATE) -> np.ndarray:
    """A source's samples at the manifest's rate (its own where the file holds that rate: core.audio.rates)."""
    return rates.read_at(path, limits, rate_hz)


def source_of(
    id_: str,
    key: str,
    label: str,
    path: Path,
    samples,
    reference_lufs: float | None,
    gain_db: float | None = None,
    lufs: float | None | str = "measure",
    kind: str = "",
    bitrate_bps: float | None = None,
    rate_hz: int = SAMPLE_RATE,
) -> Source:
    measured = loudness.integrated_lufs(samples, rate_hz) if lufs == "measure" else lufs
    assert not isinstance(measured, str)  # "measure" is the only string accepted
    lufs = measured
    gain = loudness.matching_gain_db(reference_lufs, lufs) if gain_db is None else gain_db
    rounded = None if lufs is None else round(lufs, 2)
    envelope = timeline.waveform_envelope(samples, sample_rate=rate_hz)
    return Source(id_, key, label, str(path), round(gain, 2), rounded, kind, bitrate_bps, envelope)


def write_residual(
    folder: Path,
    stem: str,
    of: str,
    original: np.ndarray,
    samples: np.ndarray,
    copies: dict | None = None,
    rate_hz: int = SAMPLE_RATE,
) -> Path:
    """original − ``samples``, sample-aligned at ``rate_hz``, as ``{stem}_residual_{of}.wav`` (the player's R
    against ``of``), on the 16-bit grid like everything the player plays; its FLAC copy goes into ``copies``."""
    n = min(original.size, samples.size)
    residual = on_grid(original[:n] - samples[:n])
    path = write_pcm16(folder / f"{stem}_residual_{of}.wav", residual, rate_hz)
    if copies is not None:
        add_copy(copies, path, residual, rate_hz)
    return path


def add_copy(copies: dict, path: Path | str, samples: np.ndarray, rate_hz: int = SAMPLE_RATE) -> None:
    """The player's FLAC copy of ``path`` (webui.jobs.pcm16_copies) into ``copies`` (the manifest's ``listen``):
    only where ``samples`` (at ``rate_hz``) are the file's own."""
    copy = listening_copy(Path(path), samples, rate_hz)
    if copy is not None:
        copies[str(path)] = copy


def _extra_sources(
    extra: list[dict],
    original: np.ndarray,
    folder: Path,
    stem: str,
    limits: AudioLimits,
    reference_lufs,
    copies: dict,
    rate_hz: int = SAMPLE_RATE,
) -> tuple[list[Source], dict[str, str]]:
    """The sources beside the codec (webui.jobs.compare: anchors, the second checkpoint), with their
    loudness gains and a residual each, at ``rate_hz``; their FLAC copies go into ``copies``."""
    out, residuals = [], {}
    for item in extra:
        samples = load_at(Path(item["wav"]), limits, rate_hz)
        add_copy(copies, item["wav"], samples, rate_hz)
        out.append(
            source_of(
                item["id"],
                item.get("key") or "",
                item.get("label") or item["id"],
                Path(item["wav"]),
                samples,
                reference_lufs,
                kind=item.get("kind") or "",
                bitrate_bps=item.get("bitrate_bps"),
                rate_hz=rate_hz,
            )
        )
        residuals[item["id"]] = str(write_residual(folder, stem, item["id"], original, samples, copies, rate_hz))
    return out, residuals


def first_manifest(original_path: Path, reconstruction_path: Path, limits: AudioLimits, extra=None) -> dict:
    """The player's first look, as soon as the reconstruction exists: original, reconstruction and
    the sources made beside them, unmatched in loudness (gain 0), no residual, no timeline. It costs
    reading the files and their waveforms (≈0.1 s a source for 10 minutes; :func:`base_manifest`,
    which follows, took minutes on the 2-core CPU for 10 minutes), so a long clip plays at once.
    The original and the reconstruction get their FLAC copies here (what the player fetches first);
    the other sources theirs with the base manifest (until then they are read as WAV, if chosen)."""
    rate = rates.rate_of_files([original_path, reconstruction_path, *(Path(i["wav"]) for i in extra or [])])
    original, reconstruction = load_at(original_path, limits, rate), load_at(reconstruction_path, limits, rate)
    n = min(original.size, reconstruction.size)
    copies: dict = {}
    add_copy(copies, original_path, original, rate)
    add_copy(copies, reconstruction_path, reconstruction, rate)

    def quick(id_, key, label, path, samples, kind, bitrate_bps=None):
        envelope = timeline.waveform_envelope(samples, sample_rate=rate)
        return asdict(Source(id_, key, label, str(path), 0.0, None, kind, bitrate_bps, envelope))

    sources = [
        quick("original", "a", "original", original_path, original, "original"),
        quick("reconstruction", "b", "reconstruction", reconstruction_path, reconstruction, "codec", CODEC_BPS),
    ]
    for item in extra or []:
        samples = load_at(Path(item["wav"]), limits, rate)
        sources.append(
            quick(
                item["id"],
                item.get("key") or "",
                item.get("label") or item["id"],
                Path(item["wav"]),
                samples,
                item.get("kind") or "",
                item.get("bitrate_bps"),
            )
        )
    return {
        "duration_s": n / rate,
        "sample_rate": rate,  # every source at it, or its copy at its own (core.audio.rates)
        "sources": sources,
        "timeline": None,
        "envelope": timeline.waveform_envelope(original[:n], sample_rate=rate),
        "reference_lufs": None,
        "residuals": {},
        "residual_of": "reconstruction",
        "listen": copies,  # {WAV path: its FLAC copy} (webui.jobs.pcm16_copies; docs/lab.md)
        "prefetch": list(PREFETCH),
        "start": START,
        "first_look": True,  # the loudness gains, the residual and the timeline follow (base_manifest)
    }


def base_manifest(
    original_path: Path,
    reconstruction_path: Path,
    folder: Path,
    limits: AudioLimits,
    decode_chunk_frames: int | None,
    progress: Progress = quiet,
    extra: list[dict] | None = None,
) -> TimelineOutput:
    """Original, reconstruction and residual (original - reconstruction, sample-aligned, written
    here), their loudness gains, the quality timeline and the waveform envelope; ``extra``: more
    sources (checked source dicts from webui.jobs.compare), each with its gain and its residual."""
    start = time.perf_counter()
    progress(0.1, "lab.job.reading")
    rate = rates.rate_of_files([original_path, reconstruction_path, *(Path(i["wav"]) for i in extra or [])])
    original, reconstruction = load_at(original_path, limits, rate), load_at(reconstruction_path, limits, rate)
    n = min(original.size, reconstruction.size)
    residual = original[:n] - reconstruction[:n]
    stem = stem_of(original_path).removesuffix("_24k_mono")
    residual = on_grid(residual)  # as written: what the player plays
    residual_path = write_pcm16(folder / f"{stem}_residual.wav", residual, rate)
    copies: dict = {}
    for path, samples in ((original_path, original), (reconstruction_path, reconstruction), (residual_path, residual)):
        add_copy(copies, path, samples, rate)
    progress(0.4, "lab.job.loudness")
    ref, rec = _analyse(original, rate), _analyse(reconstruction, rate)
    sources = [
        source_of(
            "original", "a", "original", original_path, original, ref.lufs, 0.0, ref.lufs, "original", None, rate
        ),
        source_of(
            "reconstruction",
            "b",
            "reconstruction",
            reconstruction_path,
            reconstruction,
            ref.lufs,
            lufs=rec.lufs,
            kind="codec",
            bitrate_bps=CODEC_BPS,
            rate_hz=rate,
        ),
        source_of(
            "residual",
            "r",
            "residual",
            residual_path,
            residual,
            ref.lufs,
            RESIDUAL_GAIN_DB,
            kind="residual",
            rate_hz=rate,
        ),
    ]
    more, residuals = _extra_sources(extra or [], original, folder, stem, limits, ref.lufs, copies, rate)
    sources += more
    progress(0.6, "lab.job.timeline")
    mels = (ref.mel, rec.mel) if original.size == reconstruction.size else None
    tl = timeline.timeline(original[:n], reconstruction[:n], decode_chunk_frames, mels=mels, sample_rate=rate).to_dict()
    manifest = {
        "duration_s": n / rate,
        "sample_rate": rate,
        "sources": [asdict(s) for s in sources],
        "timeline": tl,
        "envelope": timeline.waveform_envelope(original[:n], sample_rate=rate),
        "reference_lufs": ref.lufs,
        "residuals": {"reconstruction": str(residual_path), **residuals},  # R against each source (docs/lab.md)
        "residual_of": "reconstruction",
        "listen": copies,  # {WAV path: its FLAC copy} (webui.jobs.pcm16_copies)
        "prefetch": list(PREFETCH),
        "start": START,
    }
    return TimelineOutput(manifest, tl, time.perf_counter() - start)


def with_levels_of(manifest: dict, before: dict | None) -> dict:
    """``manifest`` with the ladder levels the player had ``before`` (their residuals and FLAC
    copies as they were): sources added on a result keep the levels already decoded."""
    levels = [s for s in (before or {}).get("sources", []) if is_level(s)]
    if not levels or before is None:
        return manifest
    ids = {s["id"] for s in levels}
    residuals = {k: v for k, v in (before.get("residuals") or {}).items() if k in ids}
    paths = {s["path"] for s in levels} | set(residuals.values())
    listen = {p: c for p, c in (before.get("listen") or {}).items() if p in paths}
    return manifest | {
        "sources": [s for s in manifest["sources"] if not is_level(s)] + levels,
        "residuals": dict(manifest.get("residuals") or {}) | residuals,
        "listen": dict(manifest.get("listen") or {}) | listen,
    }


def is_level(source: dict) -> bool:
    """A ladder level (manifests from before sources had a kind: its id is k<n>)."""
    return source.get("kind") == "level" or (not source.get("kind") and source["id"].startswith("k"))
