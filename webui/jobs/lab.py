"""The listening lab's work, without Gradio: the flip player's sources (original, reconstruction,
residual, ladder levels) with their loudness-matching gains, the quality timeline, the codebook
ladder and token usage. The Gradio handlers in ``webui.tabs.lab`` wrap these; bench/lab_overhead.py
times them.

The player never gets audio inside the page: it gets a manifest of file paths in the request's
folder and fetches them itself (byte ranges of long files, on demand). Files are written with
exclusive creation into a fresh request folder; nothing the user gave is overwritten.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from core import tokens
from core.analysis import catalog, timeline, token_usage
from core.analysis import metrics as analysis_metrics
from core.audio import loudness
from core.audio.files import load_audio, on_grid, write_pcm16
from core.codec import SAMPLE_RATE, check_duration
from core.judging.sources import CODEC_BPS
from core.nn import ladder
from core.settings import AudioLimits
from webui.jobs.common import Progress, quiet, stem_of
from webui.jobs.lab_analysis import analyse as _analyse
from webui.jobs.pcm16_copies import listening_copy

RESIDUAL_GAIN_DB = 0.0  # the residual plays at its own level: what was lost, as loud as it was lost
PREFETCH = ("original", "reconstruction")  # fetched ahead from the start; the others once chosen
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


def _load(path: Path, limits: AudioLimits) -> np.ndarray:
    return load_audio(path, limits).samples


def _source(
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
) -> Source:
    measured = loudness.integrated_lufs(samples) if lufs == "measure" else lufs
    assert not isinstance(measured, str)  # "measure" is the only string accepted
    lufs = measured
    gain = loudness.matching_gain_db(reference_lufs, lufs) if gain_db is None else gain_db
    rounded = None if lufs is None else round(lufs, 2)
    envelope = timeline.waveform_envelope(samples)
    return Source(id_, key, label, str(path), round(gain, 2), rounded, kind, bitrate_bps, envelope)


def _residual(
    folder: Path, stem: str, of: str, original: np.ndarray, samples: np.ndarray, copies: dict | None = None
) -> Path:
    """original − ``samples``, sample-aligned, as ``{stem}_residual_{of}.wav`` (the player's R against
    ``of``), on the 16-bit grid like everything the player plays; its FLAC copy goes into ``copies``."""
    n = min(original.size, samples.size)
    residual = on_grid(original[:n] - samples[:n])
    path = write_pcm16(folder / f"{stem}_residual_{of}.wav", residual)
    if copies is not None:
        _copy(copies, path, residual)
    return path


def _copy(copies: dict, path: Path | str, samples: np.ndarray) -> None:
    """The player's FLAC copy of ``path`` (webui.jobs.pcm16_copies) into ``copies`` (the manifest's ``listen``)."""
    copy = listening_copy(Path(path), samples)
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
) -> tuple[list[Source], dict[str, str]]:
    """The sources beside the codec (webui.jobs.compare: anchors, the second checkpoint), with their
    loudness gains and a residual each; their FLAC copies go into ``copies``."""
    out, residuals = [], {}
    for item in extra:
        samples = _load(Path(item["wav"]), limits)
        _copy(copies, item["wav"], samples)
        out.append(
            _source(
                item["id"],
                item.get("key") or "",
                item.get("label") or item["id"],
                Path(item["wav"]),
                samples,
                reference_lufs,
                kind=item.get("kind") or "",
                bitrate_bps=item.get("bitrate_bps"),
            )
        )
        residuals[item["id"]] = str(_residual(folder, stem, item["id"], original, samples, copies))
    return out, residuals


def first_manifest(original_path: Path, reconstruction_path: Path, limits: AudioLimits, extra=None) -> dict:
    """The player's first look, as soon as the reconstruction exists: original, reconstruction and
    the sources made beside them, unmatched in loudness (gain 0), no residual, no timeline. It costs
    reading the files and their waveforms (≈0.1 s a source for 10 minutes; :func:`base_manifest`,
    which follows, took minutes on the 2-core CPU for 10 minutes), so a long clip plays at once.
    The original and the reconstruction get their FLAC copies here (what the player fetches first);
    the other sources theirs with the base manifest (until then they are read as WAV, if chosen)."""
    original, reconstruction = _load(original_path, limits), _load(reconstruction_path, limits)
    n = min(original.size, reconstruction.size)
    copies: dict = {}
    _copy(copies, original_path, original)
    _copy(copies, reconstruction_path, reconstruction)

    def quick(id_, key, label, path, samples, kind, bitrate_bps=None):
        return asdict(
            Source(id_, key, label, str(path), 0.0, None, kind, bitrate_bps, timeline.waveform_envelope(samples))
        )

    sources = [
        quick("original", "a", "original", original_path, original, "original"),
        quick("reconstruction", "b", "reconstruction", reconstruction_path, reconstruction, "codec", CODEC_BPS),
    ]
    for item in extra or []:
        samples = _load(Path(item["wav"]), limits)
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
        "duration_s": n / SAMPLE_RATE,
        "sample_rate": SAMPLE_RATE,
        "sources": sources,
        "timeline": None,
        "envelope": timeline.waveform_envelope(original[:n]),
        "reference_lufs": None,
        "residuals": {},
        "residual_of": "reconstruction",
        "listen": copies,  # {WAV path: its FLAC copy} (webui.jobs.pcm16_copies; docs/lab.md)
        "prefetch": list(PREFETCH),
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
    original, reconstruction = _load(original_path, limits), _load(reconstruction_path, limits)
    n = min(original.size, reconstruction.size)
    residual = original[:n] - reconstruction[:n]
    stem = stem_of(original_path).removesuffix("_24k_mono")
    residual = on_grid(residual)  # as written: what the player plays
    residual_path = write_pcm16(folder / f"{stem}_residual.wav", residual)
    copies: dict = {}
    for path, samples in ((original_path, original), (reconstruction_path, reconstruction), (residual_path, residual)):
        _copy(copies, path, samples)
    progress(0.4, "lab.job.loudness")
    ref, rec = _analyse(original), _analyse(reconstruction)
    sources = [
        _source("original", "a", "original", original_path, original, ref.lufs, 0.0, ref.lufs, "original"),
        _source(
            "reconstruction",
            "b",
            "reconstruction",
            reconstruction_path,
            reconstruction,
            ref.lufs,
            lufs=rec.lufs,
            kind="codec",
            bitrate_bps=CODEC_BPS,
        ),
        _source("residual", "r", "residual", residual_path, residual, ref.lufs, RESIDUAL_GAIN_DB, kind="residual"),
    ]
    more, residuals = _extra_sources(extra or [], original, folder, stem, limits, ref.lufs, copies)
    sources += more
    progress(0.6, "lab.job.timeline")
    mels = (ref.mel, rec.mel) if original.size == reconstruction.size else None
    tl = timeline.timeline(original[:n], reconstruction[:n], decode_chunk_frames, mels=mels).to_dict()
    manifest = {
        "duration_s": n / SAMPLE_RATE,
        "sample_rate": SAMPLE_RATE,
        "sources": [asdict(s) for s in sources],
        "timeline": tl,
        "envelope": timeline.waveform_envelope(original[:n]),
        "reference_lufs": ref.lufs,
        "residuals": {"reconstruction": str(residual_path), **residuals},  # R against each source (docs/lab.md)
        "residual_of": "reconstruction",
        "listen": copies,  # {WAV path: its FLAC copy} (webui.jobs.pcm16_copies)
        "prefetch": list(PREFETCH),
    }
    return TimelineOutput(manifest, tl, time.perf_counter() - start)


def _codes_for(engine, audio: np.ndarray, token_path: Path | None):
    """The clip's codes: from its token file when there is one (it must be this clip's), else
    encoded now. Returns (codes, model seconds)."""
    if token_path is None:
        encoded = engine.encode_array(audio)
        return encoded.codes, encoded.seconds
    token_file = tokens.load_tokens(token_path, max_duration_s=engine.settings.max_duration_s)
    ladder.check_same_clip(token_path.name, token_file.original_samples, audio.size)
    return token_file.codes, 0.0


def run_ladder(
    engine,
    audio_path: Path,
    token_path: Path | None,
    levels,
    folder: Path,
    limits: AudioLimits,
    manifest: dict | None = None,
    progress: Progress = quiet,
) -> LadderOutput:
    """Decode the clip with the first k codebooks for each level: a WAV, a spectrogram, fast
    metrics and a loudness gain per level, added to ``manifest`` (or to one with the original only)."""
    start = time.perf_counter()
    levels = ladder.parse_levels(levels)
    progress(0.02, "job.reading")
    original = _load(audio_path, limits)
    ladder.check_budget(levels, original.size / SAMPLE_RATE, engine.settings.ladder_max_audio_s)
    codes, model_s = _codes_for(engine, original, token_path)
    check_duration([codes.shape[0]], engine.settings.max_duration_s)
    rungs = ladder.decode_ladder(
        engine,
        codes,
        original.size,
        levels,
        progress=lambda f: progress(0.05 + 0.8 * f, "lab.job.ladder", percent=f"{f:.0%}"),
    )
    model_s += sum(r.seconds for r in rungs)
    progress(0.85, "lab.job.ladder_figures")
    stem = stem_of(audio_path).removesuffix("_24k_mono")
    ref = _analyse(original)
    ref_mel, ref_lufs, top = ref.mel, ref.lufs, float(ref.mel.max())
    sources = [s for s in (manifest or {}).get("sources", []) if not _is_level(s)]
    if not sources:
        sources = [
            asdict(_source("original", "a", "original", audio_path, original, ref_lufs, 0.0, ref_lufs, "original"))
        ]
    residuals = {k: v for k, v in (manifest or {}).get("residuals", {}).items() if not k.startswith("k")}
    kept = {s["path"] for s in sources} | set(residuals.values())  # copies the page had, passed back as they were
    copies = {p: c for p, c in ((manifest or {}).get("listen") or {}).items() if p in kept}
    rows: list[dict] = []
    original_png = analysis_metrics.mel_png(
        ref_mel, folder / f"{stem}_original.png", top - analysis_metrics.TOP_DB, top
    )
    pictures = [(str(original_png), "original")]  # the page names it in the reader's language
    for rung in rungs:
        samples = on_grid(rung.samples)  # as written: what is measured is what the player plays
        wav = write_pcm16(folder / f"{stem}_k{rung.codebooks:02d}.wav", samples)
        _copy(copies, wav, samples)
        level = _analyse(samples)
        mel = level.mel
        metrics = {m.name: m.value for m in analysis_metrics.quick_compare(original, samples, (ref_mel, mel))}
        png = analysis_metrics.mel_png(
            mel, folder / f"{stem}_k{rung.codebooks:02d}.png", top - analysis_metrics.TOP_DB, top
        )
        key = str(rung.codebooks) if str(rung.codebooks) in LADDER_KEYS else ""  # [3] is k = 3, not the third level
        label = f"k{rung.codebooks}"  # the page shows it in the reader's language
        source = _source(
            f"k{rung.codebooks}",
            key,
            label,
            wav,
            samples,
            ref_lufs,
            lufs=level.lufs,
            kind="level",
            bitrate_bps=rung.bitrate_bps,
        )
        sources.append(asdict(source))
        residuals[source.id] = str(_residual(folder, stem, source.id, original, samples, copies))
        rows.append(
            {
                "codebooks": rung.codebooks,
                "bitrate_bps": rung.bitrate_bps,
                "si_sdr_db": metrics[catalog.SI_SDR],
                "mel_distance_db": metrics[catalog.MEL_DISTANCE],
                "gain_db": source.gain_db,
                "decode_s": rung.seconds,
                "wav": str(wav),
                "spectrogram": str(png),
            }
        )
        pictures.append((str(png), f"k{rung.codebooks}"))  # a source id: the page words it
    total = time.perf_counter() - start
    manifest = dict(
        manifest
        or {
            "duration_s": original.size / SAMPLE_RATE,
            "sample_rate": SAMPLE_RATE,
            "envelope": timeline.waveform_envelope(original),
            "reference_lufs": ref_lufs,
        }
    )
    manifest["sources"] = sources
    manifest["residuals"] = residuals
    manifest["listen"] = copies
    return LadderOutput(manifest, rows, pictures, {"model_s": model_s, "ui_s": total - model_s, "total_s": total})


def with_levels_of(manifest: dict, before: dict | None) -> dict:
    """``manifest`` with the ladder levels the player had ``before`` (their residuals and FLAC
    copies as they were): sources added on a result keep the levels already decoded."""
    levels = [s for s in (before or {}).get("sources", []) if _is_level(s)]
    if not levels or before is None:
        return manifest
    ids = {s["id"] for s in levels}
    residuals = {k: v for k, v in (before.get("residuals") or {}).items() if k in ids}
    paths = {s["path"] for s in levels} | set(residuals.values())
    listen = {p: c for p, c in (before.get("listen") or {}).items() if p in paths}
    return manifest | {
        "sources": [s for s in manifest["sources"] if not _is_level(s)] + levels,
        "residuals": dict(manifest.get("residuals") or {}) | residuals,
        "listen": dict(manifest.get("listen") or {}) | listen,
    }


def _is_level(source: dict) -> bool:
    """A ladder level (manifests from before sources had a kind: its id is k<n>)."""
    return source.get("kind") == "level" or (not source.get("kind") and source["id"].startswith("k"))


def usage_of(
    token_path: Path, codebook, folder: Path, max_duration_s: float | None = None, words: dict | None = None
) -> tuple[list[dict], Path]:
    """Token usage of a token file (refused from its header when longer than ``max_duration_s``):
    per-codebook rows and the figure for ``codebook``."""
    codebook = token_usage.check_codebook(codebook)
    token_file = tokens.load_tokens(token_path, max_duration_s=max_duration_s)
    rows = [asdict(r) for r in token_usage.usage(token_file.codes)]
    stem = stem_of(token_path).removesuffix("_tokens")
    png = analysis_metrics.figure_to_png(
        token_usage.usage_figure(token_file.codes, codebook, words), folder / f"{stem}_usage_cb{codebook}.png"
    )
    return rows, png
