"""Audio in and out of the codec: read any common audio file (or a microphone array), turn
it into float32 mono at 24 kHz, describe what was done to it, and write WAV files exactly.

Decoding tries soundfile (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, AIFF, ...) first and falls
back to PyAV for the rest (M4A/AAC, WebM, MP3, odd files): ``core.audio.readers``. Both stream the
file in blocks: each block is checked, downmixed and resampled as it arrives
(``core.audio.blocks``), so a long multichannel file never sits in memory whole, and the duration
cap holds while reading even where the header does not say how long the file is.

Every problem with the input raises :class:`AudioInputError` with a message that names the
file, says what is wrong and what to do. Nothing here follows URLs or unpickles anything:
PyAV may only open local files, through a short list of audio demuxers.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from core.audio.blocks import (
    BLOCK_FRAMES,
    RESAMPLE_QUALITY,
    Audio,
    AudioFacts,
    Collector,
    Source,
    finish,
    to_float32,
    too_long,
)
from core.audio.readers import FORMATS, Unreadable, load_with_av, load_with_soundfile
from core.codec import SAMPLE_RATE
from core.errors import AudioInputError
from core.names import safe_name
from core.settings import AudioLimits
from core.units import MIB

__all__ = [
    "Audio",
    "AudioFacts",
    "audio_from_array",
    "check_file",
    "describe_formats",
    "load_audio",
    "load_audio_bytes",
    "resample",
    "write_wav",
    "write_pcm16",
    "on_grid",
]

logger = logging.getLogger(__name__)

PCM_BITS = 16  # the grid of every file a listener hears, and so of what is measured (``write_pcm16``)
URL_PREFIXES = ("http://", "https://", "ftp://", "rtmp://", "rtsp://", "s3://", "data:")


def load_audio(path, limits: AudioLimits = AudioLimits()) -> Audio:
    """Read an audio file as float32 mono at 24 kHz, with facts about the original."""
    path = check_file(path, limits)
    try:
        return load_with_soundfile(path, limits)
    except Unreadable as e:
        logger.debug("soundfile cannot read %s (%s); trying PyAV", path.name, e)
        return load_with_av(path, limits)


def load_audio_bytes(data: bytes, name: str, limits: AudioLimits = AudioLimits()) -> Audio:
    """Read audio held in memory (a Parquet cell, a tar member) as ``load_audio`` reads a file, with
    the same limits and messages, which name ``name``. The bytes go through a private temporary
    file: both readers, and the checks that compare a header with the data, work on files."""
    if not data:
        raise AudioInputError(f"'{name}' is empty (0 bytes): there is no audio in it.")
    if len(data) > limits.max_file_bytes:
        raise AudioInputError(
            f"'{name}' is {len(data) / MIB:.0f} MiB, over the {limits.max_file_bytes / MIB:.0f} MiB limit."
        )
    given = Path(name)  # the ending is kept: readers take format hints from it
    safe = f"{safe_name(given.stem, 'audio', max_chars=100, dots=False)}.{safe_name(given.suffix, 'bin')}"
    with tempfile.TemporaryDirectory(prefix="codec-bytes-") as folder:
        path = Path(folder) / safe
        path.write_bytes(data)
        try:
            return load_audio(path, limits)
        except AudioInputError as e:
            raise AudioInputError(str(e).replace(safe, name)) from e


def audio_from_array(samples, sample_rate: int, name: str = "array", limits: AudioLimits = AudioLimits()) -> Audio:
    """Turn an array of shape (n,) or (n, channels) into float32 mono at 24 kHz.

    int16/int32/uint8 arrays are scaled to [-1, 1); float arrays are taken as they are.
    This is what Gradio's numpy microphone input gives: (sample_rate, int16 array).
    """
    x = _check_array(samples, name)
    sample_rate = _check_rate(sample_rate, name)
    if x.shape[0] > limits.max_duration_s * sample_rate:
        raise AudioInputError(too_long(name, x.shape[0] / sample_rate, limits.max_duration_s))
    source = Source(f"array/{x.dtype}", sample_rate, x.shape[1], x.shape[0])
    collector = Collector(name, source, limits)
    for start in range(0, x.shape[0], BLOCK_FRAMES):
        collector.add(to_float32(x[start : start + BLOCK_FRAMES]))
    return finish(name, source, collector, limits)


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


def on_grid(samples, bits: int = PCM_BITS) -> np.ndarray:
    """``samples`` rounded to the nearest ``bits``-bit PCM value (float32, full scale clipped as
    PCM clips it): exactly what a ``bits``-bit file stores and a decoder gives back."""
    scale = 2.0 ** (bits - 1)
    x = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0 - 1.0 / scale)
    return (np.round(x * scale) / scale).astype(np.float32)


def write_pcm16(path, samples, sample_rate: int = SAMPLE_RATE) -> Path:
    """The one writer of every file a listener hears (a round trip's sources on the page, in Live,
    the CLI and ``evaluate``): ``samples`` on the 16-bit grid (``on_grid``), written by
    :func:`write_wav` (never overwriting). What is measured from the file is what is played."""
    return write_wav(path, on_grid(samples), sample_rate)


def describe_formats() -> str:
    """A one-line list of the accepted formats, for error messages and the UI."""
    return f"{FORMATS}; any sample rate, any number of channels"


def check_file(path, limits: AudioLimits) -> Path:
    """The path, once ``stat()`` shows a regular, non-empty file within the size limit; else an
    :class:`AudioInputError` that says which rule (a special file is named by its kind)."""
    if path is None or str(path) == "":
        raise AudioInputError("No audio file was given. Choose a file or record a clip.")
    if not isinstance(path, (str, os.PathLike)):
        raise AudioInputError(f"Expected the path of an audio file, got {type(path).__name__}. Give a file path.")
    text = str(path)
    if text.lower().startswith(URL_PREFIXES):
        raise AudioInputError(
            f"'{text}' is a URL; audio is only read from local files. Download it first, then give the downloaded file."
        )
    path = Path(path)
    name = path.name
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise AudioInputError(f"Audio file '{path}' does not exist. Check the path and try again.") from None
    if stat.S_ISDIR(mode):
        raise AudioInputError(f"'{name}' is a folder, not an audio file. Give one audio file.")
    if not stat.S_ISREG(mode):
        raise AudioInputError(f"'{name}' is {_kind(mode)}, not a regular file. Give an audio file on disk.")
    size = path.stat().st_size
    if size == 0:
        raise AudioInputError(
            f"'{name}' is empty (0 bytes). It was probably not saved or uploaded completely; "
            "try again with the complete file."
        )
    if size > limits.max_file_bytes:
        raise AudioInputError(
            f"'{name}' is {size / MIB:.0f} MiB, over the {limits.max_file_bytes / MIB:.0f} "
            "MiB limit. Cut it into shorter pieces or compress it (e.g. FLAC) and try again."
        )
    return path


def _kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "a special file"


def _check_array(samples, name: str) -> np.ndarray:
    if samples is None:
        raise AudioInputError(f"No audio was given for '{name}'. Record or choose a clip.")
    x = np.asarray(samples)
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise AudioInputError(f"'{name}' has samples of type {x.dtype}; give integer or float samples.")
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] == 0 or x.shape[1] > 64:
        raise AudioInputError(
            f"'{name}' has shape {x.shape}; give samples shaped (n,) or (n, channels) "
            "(transpose a (channels, n) array)."
        )
    if x.shape[0] == 0:
        raise AudioInputError(f"'{name}' contains no audio samples. Record or choose a longer clip.")
    return x


def _check_rate(sample_rate, name: str) -> int:
    try:
        rate = int(sample_rate)
        valid = rate == sample_rate and rate > 0
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise AudioInputError(f"'{name}' has sample rate {sample_rate!r}; give a positive whole number of Hz.")
    return rate
