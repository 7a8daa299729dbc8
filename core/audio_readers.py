"""Decoding audio files into a :class:`~core.audio_blocks.Collector`, block by block.

soundfile (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, MP3, AIFF, ...) is tried first; an
``ffmpeg`` subprocess reads what libsndfile cannot (M4A/AAC, WebM, odd MP3 or Opus files).
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
from pathlib import Path

import numpy as np
import soundfile as sf

from .audio_blocks import BLOCK_FRAMES, Audio, AudioLimits, Collector, Source, check_complete, check_declared, finish
from .errors import AudioInputError

logger = logging.getLogger(__name__)

FFPROBE_TIMEOUT_S = 30  # seconds
FFMPEG_TIMEOUT_S = 300  # seconds, for decoding a whole file
FFMPEG_DEMUXERS = "wav,w64,flac,ogg,mp3,mov,matroska,aac,aiff,caf"  # no playlists, no network
FORMATS = "WAV, FLAC, OGG/Vorbis, Opus, MP3, M4A/AAC, WebM"  # what users may give us


class Unreadable(Exception):
    """soundfile could not read the file; ffmpeg may."""


def load_with_soundfile(path: Path, limits: AudioLimits) -> Audio:
    try:
        f = sf.SoundFile(path)
    except (sf.SoundFileError, RuntimeError) as e:
        raise Unreadable(str(e)) from e
    with f:
        declared = max(f.frames, _wav_declared_frames(path, f) or 0)
        source = Source(_soundfile_format(f), f.samplerate, f.channels, declared)
        check_declared(path.name, source, limits)
        collector = Collector(path.name, source, limits)
        try:
            while True:
                block = f.read(BLOCK_FRAMES, dtype="float32", always_2d=True)
                if block.shape[0] == 0:
                    break
                collector.add(block)
        except (sf.SoundFileError, RuntimeError) as e:
            raise Unreadable(str(e)) from e
    check_complete(path.name, source, collector.frames)
    return finish(path.name, source, collector, limits)


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


def tool(name: str) -> str | None:
    return shutil.which(name)


def load_with_ffmpeg(path: Path, limits: AudioLimits, soundfile_error: str) -> Audio:
    ffmpeg, ffprobe = tool("ffmpeg"), tool("ffprobe")
    if ffmpeg is None or ffprobe is None:
        raise AudioInputError(
            f"Could not read '{path.name}' ({_without_path(soundfile_error, path)}). It is "
            "either not audio, damaged, or in a format that needs ffmpeg (M4A/AAC, WebM), "
            "which is not installed. Install it (apt-get install ffmpeg) and try again, or "
            "convert the file to WAV or FLAC.")
    source = _probe(ffprobe, path)
    check_declared(path.name, source, limits)
    collector = Collector(path.name, source, limits)
    errors = _decode(ffmpeg, path, source, collector)
    if errors:
        logger.warning("ffmpeg reported problems decoding %s: %s", path.name, errors)
        check_complete(path.name, source, collector.frames)
    return finish(path.name, source, collector, limits)


def _input_args(path: Path) -> list[str]:
    """ffmpeg/ffprobe input options: local files only, audio demuxers only."""
    return ["-protocol_whitelist", "file", "-format_whitelist", FFMPEG_DEMUXERS,
            "-i", f"file:{path.resolve()}"]


def _probe(ffprobe: str, path: Path) -> Source:
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
    return Source(_ffmpeg_format(container, stream.get("codec_name", ""), path), rate,
                   channels, declared)


def _decode(ffmpeg: str, path: Path, source: Source, collector: Collector) -> str:
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
