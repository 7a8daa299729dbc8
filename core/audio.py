"""Audio in and out of the codec: read any common audio file (or a microphone array), turn
it into float32 mono at 24 kHz, describe what was done to it, and write WAV files exactly.

Decoding tries soundfile (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, MP3, AIFF, ...) first and
falls back to an ``ffmpeg`` subprocess for what libsndfile cannot read (M4A/AAC, WebM, odd
MP3 or Opus files). Both paths stream the file in blocks: each block is checked, downmixed
and resampled as it arrives, so a long multichannel file never sits in memory whole.

Every problem with the input raises :class:`AudioInputError` with a message that names the
file, says what is wrong and what to do. Nothing here follows URLs or unpickles anything:
ffmpeg may only open local files, through a short list of audio demuxers.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from core.errors import AudioInputError

logger = logging.getLogger(__name__)

SAMPLE_RATE = 24_000  # Hz, codec input/output rate
SAMPLES_PER_FRAME = 1920  # samples per code frame
FRAME_RATE = SAMPLE_RATE / SAMPLES_PER_FRAME  # frames/s (12.5)

CLIP_LEVEL = 0.999  # |x| at or above this counts as clipped
NEAR_SILENCE_DBFS = -60.0  # dBFS, RMS below this is "nearly silent"
SILENCE_FLOOR_DBFS = -120.0  # dBFS, reported for digital silence instead of -inf
RESAMPLE_QUALITY = "HQ"  # soxr high quality (20-bit precision, flat passband)
BLOCK_FRAMES = 1 << 16  # frames decoded, checked and resampled at a time
TRUNCATION_TOLERANCE = 0.02  # fraction of the declared length that may be missing
FFPROBE_TIMEOUT_S = 30  # seconds
FFMPEG_TIMEOUT_S = 300  # seconds, for decoding a whole file
FFMPEG_DEMUXERS = "wav,w64,flac,ogg,mp3,mov,matroska,aac,aiff,caf"  # no playlists, no network
URL_PREFIXES = ("http://", "https://", "ftp://", "rtmp://", "rtsp://", "s3://", "data:")
FORMATS = "WAV, FLAC, OGG/Vorbis, Opus, MP3, M4A/AAC, WebM"  # what users may give us


@dataclass(frozen=True)
class AudioFacts:
    name: str  # file name (no directory) or a label like "microphone"
    format: str  # container/codec as detected, e.g. "wav", "ogg/vorbis", "m4a/aac"
    sample_rate: int  # original rate, Hz
    channels: int  # original channel count
    duration_s: float  # seconds
    peak: float  # max |x| of the mono 24 kHz signal
    clipped_samples: int  # samples with |x| >= CLIP_LEVEL in the original (before downmix)
    rms_dbfs: float  # loudness of the mono signal
    near_silent: bool  # rms below NEAR_SILENCE_DBFS
    warnings: tuple[str, ...] = field(default=())  # sentences to show the user

    def to_dict(self) -> dict:
        d = asdict(self)
        d["warnings"] = list(self.warnings)
        return d


@dataclass(frozen=True)
class Audio:
    samples: np.ndarray  # float32 mono at SAMPLE_RATE, shape (n,)
    facts: AudioFacts  # where it came from and what was done to it


@dataclass(frozen=True)
class AudioLimits:
    max_duration_s: float = 1800.0  # seconds (30 min)
    max_file_bytes: int = 1 << 30  # bytes (1 GiB)
    min_samples: int = SAMPLES_PER_FRAME  # samples at 24 kHz; shorter than one frame is refused


@dataclass(frozen=True)
class _Source:
    format: str  # as AudioFacts.format
    sample_rate: int  # Hz
    channels: int  # channel count
    declared_frames: int | None  # frames the header promises; None when unknown


class _Unreadable(Exception):
    """soundfile could not read the file; ffmpeg may."""


# ---------------------------------------------------------------------------------------
# Public API


def load_audio(path, limits: AudioLimits = AudioLimits()) -> Audio:
    """Read an audio file as float32 mono at 24 kHz, with facts about the original."""
    path = _check_file(path, limits)
    try:
        return _load_with_soundfile(path, limits)
    except _Unreadable as e:
        logger.debug("soundfile cannot read %s (%s); trying ffmpeg", path.name, e)
        return _load_with_ffmpeg(path, limits, str(e))


def audio_from_array(samples, sample_rate: int, name: str = "array",
                     limits: AudioLimits = AudioLimits()) -> Audio:
    """Turn an array of shape (n,) or (n, channels) into float32 mono at 24 kHz.

    int16/int32/uint8 arrays are scaled to [-1, 1); float arrays are taken as they are.
    This is what Gradio's numpy microphone input gives: (sample_rate, int16 array).
    """
    x = _check_array(samples, name)
    sample_rate = _check_rate(sample_rate, name)
    if x.shape[0] > limits.max_duration_s * sample_rate:
        raise AudioInputError(_too_long(name, x.shape[0] / sample_rate, limits.max_duration_s))
    source = _Source(f"array/{x.dtype}", sample_rate, x.shape[1], x.shape[0])
    collector = _Collector(name, source, limits)
    for start in range(0, x.shape[0], BLOCK_FRAMES):
        collector.add(_to_float32(x[start:start + BLOCK_FRAMES]))
    return _finish(name, source, collector, limits)


def resample(x: np.ndarray, orig_sr: int, target_sr: int = SAMPLE_RATE) -> np.ndarray:
    """Resample float audio of shape (n,) or (n, channels) with soxr (high quality)."""
    x = np.asarray(x, dtype=np.float32)
    if orig_sr == target_sr:
        return x.copy()
    return soxr.resample(x, orig_sr, target_sr, quality=RESAMPLE_QUALITY)


def write_wav(path, samples, sample_rate: int = SAMPLE_RATE) -> Path:
    """Write samples as a 32-bit float WAV, exactly (never normalized or clipped).

    Refuses to overwrite an existing file (FileExistsError), so nothing a user gave us is
    ever replaced.
    """
    path = Path(path)
    x = np.asarray(samples, dtype=np.float32)
    with open(path, "xb") as f:  # "x": fails if the file exists, atomically
        try:
            sf.write(f, x, sample_rate, format="WAV", subtype="FLOAT")
        except BaseException:
            f.close()
            path.unlink(missing_ok=True)
            raise
    return path


def describe_formats() -> str:
    """A one-line list of the accepted formats, for error messages and the UI."""
    line = f"{FORMATS}; any sample rate, any number of channels"
    if _tool("ffmpeg") is None:
        line += " (M4A/AAC and WebM need ffmpeg, which is not installed: apt-get install ffmpeg)"
    return line


# ---------------------------------------------------------------------------------------
# Checks before decoding


def _check_file(path, limits: AudioLimits) -> Path:
    if path is None or str(path) == "":
        raise AudioInputError("No audio file was given. Choose a file or record a clip.")
    if not isinstance(path, (str, os.PathLike)):
        raise AudioInputError(
            f"Expected the path of an audio file, got {type(path).__name__}. Give a file path.")
    text = str(path)
    if text.lower().startswith(URL_PREFIXES):
        raise AudioInputError(
            f"'{text}' is a URL; audio is only read from local files. Download it first, "
            "then give the downloaded file.")
    path = Path(path)
    name = path.name
    if not path.exists():
        raise AudioInputError(f"Audio file '{path}' does not exist. Check the path and try again.")
    if path.is_dir():
        raise AudioInputError(f"'{name}' is a folder, not an audio file. Give one audio file.")
    if not path.is_file():
        raise AudioInputError(f"'{name}' is not a regular file. Give an audio file on disk.")
    size = path.stat().st_size
    if size == 0:
        raise AudioInputError(
            f"'{name}' is empty (0 bytes). It was probably not saved or uploaded completely; "
            "try again with the complete file.")
    if size > limits.max_file_bytes:
        raise AudioInputError(
            f"'{name}' is {size / 2**20:.0f} MiB, over the {limits.max_file_bytes / 2**20:.0f} "
            "MiB limit. Cut it into shorter pieces or compress it (e.g. FLAC) and try again.")
    return path


def _check_array(samples, name: str) -> np.ndarray:
    if samples is None:
        raise AudioInputError(f"No audio was given for '{name}'. Record or choose a clip.")
    x = np.asarray(samples)
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise AudioInputError(
            f"'{name}' has samples of type {x.dtype}; give integer or float samples.")
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] == 0 or x.shape[1] > 64:
        raise AudioInputError(
            f"'{name}' has shape {x.shape}; give samples shaped (n,) or (n, channels) "
            "(transpose a (channels, n) array).")
    if x.shape[0] == 0:
        raise AudioInputError(
            f"'{name}' contains no audio samples. Record or choose a longer clip.")
    return x


def _check_rate(sample_rate, name: str) -> int:
    try:
        rate = int(sample_rate)
        valid = rate == sample_rate and rate > 0
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise AudioInputError(
            f"'{name}' has sample rate {sample_rate!r}; give a positive whole number of Hz.")
    return rate


def _check_declared(name: str, source: _Source, limits: AudioLimits) -> None:
    """Refuse a file whose header already says it is too long, before decoding it."""
    if source.declared_frames is None:
        return
    seconds = source.declared_frames / source.sample_rate
    if seconds > limits.max_duration_s:
        raise AudioInputError(_too_long(name, seconds, limits.max_duration_s))


def _check_complete(name: str, source: _Source, frames: int) -> None:
    """Refuse a file that holds clearly less audio than its header promises."""
    declared = source.declared_frames
    if declared is None:
        return
    missing = declared - frames
    one_frame = SAMPLES_PER_FRAME / SAMPLE_RATE * source.sample_rate  # in original frames
    allowed = max(TRUNCATION_TOLERANCE * declared, one_frame)
    if missing > allowed:
        raise AudioInputError(
            f"'{name}' is cut off: its header promises {declared / source.sample_rate:.2f} s of "
            f"audio but the file holds only {frames / source.sample_rate:.2f} s. It was probably "
            "not copied or uploaded completely; get the complete file or re-export it.")


def _too_long(name: str, seconds: float, max_s: float) -> str:
    return (f"'{name}' is {_minutes(seconds)} long, over the {_minutes(max_s)} "
            "limit. Cut it into shorter pieces and try again.")


def _minutes(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


# ---------------------------------------------------------------------------------------
# Streaming downmix, checks and resampling


class _Collector:
    """Takes decoded blocks of shape (k, channels): checks them, counts clipping, downmixes
    to mono and resamples to 24 kHz as they arrive."""

    def __init__(self, name: str, source: _Source, limits: AudioLimits):
        self.name = name
        self.source = source
        self.limits = limits
        self.max_frames = limits.max_duration_s * source.sample_rate
        self.frames = 0  # original frames seen
        self.clipped = 0  # original samples (all channels) at or above CLIP_LEVEL
        self.sum_squares = 0.0  # of the mono 24 kHz output, in float64
        self.peak = 0.0  # of the mono 24 kHz output
        self.parts: list[np.ndarray] = []
        self.stream = None
        if source.sample_rate != SAMPLE_RATE:
            self.stream = soxr.ResampleStream(source.sample_rate, SAMPLE_RATE, 1,
                                              dtype="float32", quality=RESAMPLE_QUALITY)

    def add(self, block: np.ndarray) -> None:
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            first = (self.frames + int(np.argmin(finite))) / self.source.sample_rate
            raise AudioInputError(
                f"'{self.name}' contains NaN or infinite sample values (the first at "
                f"{first:.2f} s). The file is damaged or was written by a broken program; "
                "re-export it.")
        self.frames += block.shape[0]
        if self.frames > self.max_frames:
            raise AudioInputError(
                f"'{self.name}' is longer than the {_minutes(self.limits.max_duration_s)} "
                "limit. Cut it into shorter pieces and try again.")
        self.clipped += int(np.count_nonzero(np.abs(block) >= CLIP_LEVEL))
        mono = block[:, 0] if block.shape[1] == 1 else block.mean(axis=1, dtype=np.float32)
        self._keep(mono if self.stream is None else self.stream.resample_chunk(mono))

    def finish(self) -> np.ndarray:
        if self.stream is not None:
            self._keep(self.stream.resample_chunk(np.zeros(0, np.float32), last=True))
        if not self.parts:
            return np.zeros(0, np.float32)
        return np.ascontiguousarray(np.concatenate(self.parts), dtype=np.float32)

    def _keep(self, mono: np.ndarray) -> None:
        if mono.size == 0:
            return
        self.parts.append(mono)
        self.sum_squares += float(np.dot(mono.astype(np.float64), mono.astype(np.float64)))
        self.peak = max(self.peak, float(np.abs(mono).max()))


def _finish(name: str, source: _Source, collector: _Collector, limits: AudioLimits) -> Audio:
    if collector.frames == 0:
        raise AudioInputError(
            f"'{name}' contains no audio samples. It may be damaged or cut off; "
            "record or export it again.")
    mono = collector.finish()
    duration_s = collector.frames / source.sample_rate
    if mono.size < limits.min_samples:
        raise AudioInputError(
            f"'{name}' is {duration_s * 1000:.0f} ms long; the codec needs at least "
            f"{limits.min_samples / SAMPLE_RATE * 1000:.0f} ms (one frame). Give a longer clip.")
    rms = math.sqrt(collector.sum_squares / mono.size)
    rms_dbfs = max(SILENCE_FLOOR_DBFS, 20 * math.log10(rms)) if rms > 0 else SILENCE_FLOOR_DBFS
    facts = AudioFacts(
        name=name,
        format=source.format,
        sample_rate=source.sample_rate,
        channels=source.channels,
        duration_s=duration_s,
        peak=collector.peak,
        clipped_samples=collector.clipped,
        rms_dbfs=round(rms_dbfs, 2),
        near_silent=rms_dbfs < NEAR_SILENCE_DBFS,
        warnings=_warnings(source, collector.clipped, rms_dbfs),
    )
    logger.info("Loaded %s: %s, %d Hz, %d ch, %.2f s, %.1f dBFS", name, facts.format,
                facts.sample_rate, facts.channels, facts.duration_s, facts.rms_dbfs)
    return Audio(samples=mono, facts=facts)


def _warnings(source: _Source, clipped: int, rms_dbfs: float) -> tuple[str, ...]:
    out = []
    if source.sample_rate != SAMPLE_RATE:
        out.append(f"Resampled from {source.sample_rate} Hz to {SAMPLE_RATE} Hz.")
    if source.channels == 2:
        out.append("Stereo downmixed to mono.")
    elif source.channels > 2:
        out.append(f"{source.channels} channels downmixed to mono.")
    if clipped == 1:
        out.append("1 sample is clipped.")
    elif clipped > 1:
        out.append(f"{clipped} samples are clipped.")
    if rms_dbfs < NEAR_SILENCE_DBFS:
        out.append(f"The clip is nearly silent ({rms_dbfs:.0f} dBFS).")
    return tuple(out)


def _to_float32(x: np.ndarray) -> np.ndarray:
    """Integer samples scaled to [-1, 1) (unsigned ones centred first); floats as they are."""
    if np.issubdtype(x.dtype, np.floating):
        return x.astype(np.float32, copy=False)
    info = np.iinfo(x.dtype)
    half = (int(info.max) + 1) // 2 if info.min == 0 else -int(info.min)
    offset = half if info.min == 0 else 0
    return ((x.astype(np.float64) - offset) / half).astype(np.float32)


# ---------------------------------------------------------------------------------------
# soundfile


def _load_with_soundfile(path: Path, limits: AudioLimits) -> Audio:
    try:
        f = sf.SoundFile(path)
    except (sf.SoundFileError, RuntimeError) as e:
        raise _Unreadable(str(e)) from e
    with f:
        declared = max(f.frames, _wav_declared_frames(path, f) or 0)
        source = _Source(_soundfile_format(f), f.samplerate, f.channels, declared)
        _check_declared(path.name, source, limits)
        collector = _Collector(path.name, source, limits)
        try:
            while True:
                block = f.read(BLOCK_FRAMES, dtype="float32", always_2d=True)
                if block.shape[0] == 0:
                    break
                collector.add(block)
        except (sf.SoundFileError, RuntimeError) as e:
            raise _Unreadable(str(e)) from e
    _check_complete(path.name, source, collector.frames)
    return _finish(path.name, source, collector, limits)


def _soundfile_format(f: sf.SoundFile) -> str:
    if f.format in ("WAV", "WAVEX", "RF64"):
        return "wav"
    if f.format == "OGG":
        return "opus" if f.subtype == "OPUS" else f"ogg/{f.subtype.lower()}"
    return f.format.lower()


_PCM_BYTES = {"PCM_S8": 1, "PCM_U8": 1, "PCM_16": 2, "PCM_24": 3, "PCM_32": 4, "FLOAT": 4,
              "DOUBLE": 8}  # bytes per sample of uncompressed WAV subtypes


def _wav_declared_frames(path: Path, f: sf.SoundFile) -> int | None:
    """Frames the data chunk of a RIFF/WAVE header declares. libsndfile quietly shortens a
    truncated file to what is there; this is how we notice. None when the header does not
    say (placeholder sizes of streaming writers, compressed subtypes, not RIFF)."""
    if f.format not in ("WAV", "WAVEX") or f.subtype not in _PCM_BYTES:
        return None
    with open(path, "rb") as raw:
        head = raw.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        while True:
            chunk = raw.read(8)
            if len(chunk) < 8:
                return None
            size = int.from_bytes(chunk[4:], "little")
            if chunk[:4] == b"data":
                if size == 0 or size >= 0x7FFF_FFFF:
                    return None
                return size // (_PCM_BYTES[f.subtype] * f.channels)
            raw.seek(size + (size & 1), os.SEEK_CUR)


# ---------------------------------------------------------------------------------------
# ffmpeg


def _tool(name: str) -> str | None:
    return shutil.which(name)


def _load_with_ffmpeg(path: Path, limits: AudioLimits, soundfile_error: str) -> Audio:
    ffmpeg, ffprobe = _tool("ffmpeg"), _tool("ffprobe")
    if ffmpeg is None or ffprobe is None:
        raise AudioInputError(
            f"Could not read '{path.name}' ({_without_path(soundfile_error, path)}). It is "
            "either not audio, damaged, or in a format that needs ffmpeg (M4A/AAC, WebM), "
            "which is not installed. Install it (apt-get install ffmpeg) and try again, or "
            "convert the file to WAV or FLAC.")
    source = _probe(ffprobe, path)
    _check_declared(path.name, source, limits)
    collector = _Collector(path.name, source, limits)
    errors = _decode(ffmpeg, path, source, collector)
    if errors:
        logger.warning("ffmpeg reported problems decoding %s: %s", path.name, errors)
        _check_complete(path.name, source, collector.frames)
    return _finish(path.name, source, collector, limits)


def _input_args(path: Path) -> list[str]:
    """ffmpeg/ffprobe input options: local files only, audio demuxers only."""
    return ["-protocol_whitelist", "file", "-format_whitelist", FFMPEG_DEMUXERS,
            "-i", f"file:{path.resolve()}"]


def _probe(ffprobe: str, path: Path) -> _Source:
    args = [ffprobe, "-v", "error", "-select_streams", "a:0",
            "-show_entries",
            "format=format_name,duration:stream=codec_name,sample_rate,channels,duration",
            "-of", "json", *_input_args(path)]
    try:
        result = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=FFPROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as e:
        raise AudioInputError(
            f"Inspecting '{path.name}' took longer than {FFPROBE_TIMEOUT_S} s. The file may be "
            "damaged; convert it to WAV or FLAC and try again.") from e
    if result.returncode != 0:
        raise AudioInputError(
            f"'{path.name}' is not an audio file this program can read, or it is damaged "
            f"({_last_line(result.stderr, path)}). Give a file in one of these formats: "
            f"{FORMATS}.")
    try:
        info = json.loads(result.stdout)
        stream = info["streams"][0]
        rate, channels = int(stream["sample_rate"]), int(stream["channels"])
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise AudioInputError(
            f"'{path.name}' has no audio track that can be read (no sample rate or channel "
            f"count found). Accepted formats: {FORMATS}.") from e
    if rate <= 0 or channels <= 0:
        raise AudioInputError(f"'{path.name}' declares {rate} Hz and {channels} channels; "
                              "it is damaged. Re-export it.")
    container = info.get("format", {}).get("format_name", "")
    duration = _float_or_none(stream.get("duration")) or _float_or_none(
        info.get("format", {}).get("duration"))
    declared = None if duration is None else round(duration * rate)
    return _Source(_ffmpeg_format(container, stream.get("codec_name", ""), path), rate,
                   channels, declared)


def _decode(ffmpeg: str, path: Path, source: _Source, collector: _Collector) -> str:
    """Stream the first audio track as float32 at its own rate and channel count into
    collector; return what ffmpeg reported on stderr (empty if all went well)."""
    args = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", *_input_args(path),
            "-map", "0:a:0", "-vn", "-sn", "-dn", "-ac", str(source.channels),
            "-ar", str(source.sample_rate), "-f", "f32le", "-acodec", "pcm_f32le", "pipe:1"]
    frame_bytes = 4 * source.channels
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=stderr)
        timer = threading.Timer(FFMPEG_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            while True:
                data = proc.stdout.read(BLOCK_FRAMES * frame_bytes)
                usable = len(data) - len(data) % frame_bytes
                if usable == 0:
                    break
                block = np.frombuffer(data[:usable], dtype="<f4").reshape(-1, source.channels)
                collector.add(block)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            returncode = proc.wait()
            timed_out = timer.finished.is_set()  # set once the timer has killed ffmpeg
            timer.cancel()
        stderr.seek(0)
        errors = stderr.read().decode("utf-8", "replace")
    if timed_out:
        raise AudioInputError(
            f"Decoding '{path.name}' took longer than {FFMPEG_TIMEOUT_S} s. Convert it to WAV "
            "or FLAC and try again.")
    if returncode != 0:
        raise AudioInputError(
            f"'{path.name}' could not be decoded; it is damaged or not audio "
            f"({_last_line(errors.encode(), path)}). Re-export it, or convert it to WAV or FLAC.")
    return _without_path(errors.strip(), path)


def _ffmpeg_format(container: str, codec: str, path: Path) -> str:
    first = container.split(",")[0]
    suffix = path.suffix.lower().lstrip(".")
    if first == "mov":
        container = suffix if suffix in ("m4a", "mp4", "m4b", "mov", "3gp") else "m4a"
        return f"{container}/{codec}"
    if first == "matroska":
        return "webm" if suffix == "webm" else f"mkv/{codec}"
    if first == "ogg":
        return "opus" if codec == "opus" else f"ogg/{codec}"
    if first in ("wav", "w64", "flac", "mp3", "aac"):
        return first
    return f"{first}/{codec}"


def _last_line(stderr: bytes, path: Path) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return _without_path(lines[-1] if lines else "no details", path)


def _without_path(text: str, path: Path) -> str:
    """ffmpeg's words with the file's full path (a server detail) replaced by its name."""
    for full in (f"file:{path.resolve()}", str(path.resolve()), str(path)):
        text = text.replace(full, path.name)
    return text


def _float_or_none(value) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) and out > 0 else None
