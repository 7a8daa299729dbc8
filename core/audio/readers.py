"""Decoding audio files into a :class:`~core.audio.blocks.Collector`, block by block, with the
duration cap enforced while reading.

soundfile (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, AIFF, ...) is tried first; PyAV (FFmpeg's
libraries inside the wheel, no system ffmpeg needed) reads the rest: M4A/AAC, WebM/Matroska, MP3
(libsndfile's MP3 length is a bitrate estimate and it stops reading there) and odd files. PyAV may
only open local files, through a short list of audio demuxers. A length the container does not
state exactly (a streamed FLAC or WebM, an MP3 without a Xing header) is unknown, never guessed:
such files are refused by the cap as they are read, not by their header.

Damaged data: the decoder's errors are kept, not swallowed. A file whose decode stops
short of the length its header states is refused with the words of the truncated-WAV rule
(``check_complete``), naming the decoder's errors; an MP3 states its length only in a Xing/Info or
VBRI frame count (read here, ``mp3_stated_frames``), not from its bitrate. Where no length is stated,
the audio that decoded is used, with a warning naming the decoder's errors.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import soundfile as sf

from core.audio.blocks import (
    BLOCK_FRAMES,
    Audio,
    Collector,
    Source,
    check_complete,
    check_declared,
    finish,
)
from core.errors import AudioInputError
from core.settings import AudioLimits

logger = logging.getLogger(__name__)

UNKNOWN_FRAMES = 2**63 - 1  # libsndfile's frame count when the header does not say (a streamed FLAC)
FORMATS = "WAV, FLAC, OGG/Vorbis, Opus, MP3, M4A/AAC, WebM"  # what users may give us
# File name endings of what these readers open (libsndfile's formats, then AV_DEMUXERS below): the one
# list that folder walks (``python -m core tokenize``, evaluations) use; tests/core/audio checks each.
AUDIO_SUFFIXES = (
    ".wav", ".wave", ".w64", ".rf64", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".m4a", ".mp4", ".m4b",
    ".aac", ".webm", ".mka", ".aif", ".aiff", ".aifc", ".caf", ".au", ".snd",
)  # fmt: skip


class Unreadable(Exception):
    """soundfile cannot read the file (or not reliably); PyAV may."""


# What libsndfile's decoders (mpg123 for MP3) print straight to the process's stderr, in our words:
# logged through logging, never a raw line in the server's output.
DECODER_NOTES = {
    "Xing stream size off by more than 1%": (
        "the MP3's Xing/Info header states a byte size more than 1% off the file's; its length is "
        "checked against the audio that decodes"
    ),
}
_STDERR_LOCK = threading.Lock()  # one capture of file descriptor 2 at a time


@contextlib.contextmanager
def decoder_stderr(name: str) -> Iterator[None]:
    """Catch what C decoders write to file descriptor 2 while the block runs: lines of
    ``DECODER_NOTES`` are logged in words naming ``name``; anything else (another thread's log line
    written meanwhile, an unknown decoder's words) goes on to the real stderr unchanged."""
    with _STDERR_LOCK, tempfile.TemporaryFile() as caught:
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            _pass_on(caught.read().decode("utf-8", "replace"), name)


def _pass_on(text: str, name: str) -> None:
    rest = []
    for line in text.splitlines(keepends=True):
        note = next((words for raw, words in DECODER_NOTES.items() if raw in line), None)
        if note:
            logger.info("%s: %s", name, note)
        else:
            rest.append(line)
    if rest:
        os.write(2, "".join(rest).encode())


def load_with_soundfile(path: Path, limits: AudioLimits) -> Audio:
    try:
        with decoder_stderr(path.name):  # libsndfile's mpg123 prints its warnings on opening an MP3
            f = sf.SoundFile(os.fsencode(path))  # bytes: any file name works (soundfile encodes str strictly)
    except (sf.SoundFileError, RuntimeError) as e:
        raise Unreadable(str(e)) from e
    with f:
        if f.format == "MP3":  # libsndfile's MP3 length is a bitrate estimate, and it stops reading there
            raise Unreadable("MP3 goes through PyAV")
        stated = f.frames if 0 < f.frames < UNKNOWN_FRAMES else None  # unknown is unknown, not huge
        declared = max(stated or 0, _wav_declared_frames(path, f) or 0) or None
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


_PCM_BYTES = {
    "PCM_S8": 1,
    "PCM_U8": 1,
    "PCM_16": 2,
    "PCM_24": 3,
    "PCM_32": 4,
    "FLOAT": 4,
    "DOUBLE": 8,
}  # bytes per sample of uncompressed WAV subtypes


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
# PyAV (FFmpeg's libraries inside the wheel)

AV_DEMUXERS = "wav,w64,flac,ogg,mp3,mov,matroska,aac,aiff,caf"  # local audio containers only: no playlists
AV_DECODE_TIMEOUT_S = 300  # seconds for decoding a whole file
ESTIMATED_LENGTH_DEMUXERS = ("mp3", "aac")  # their "duration" is a bitrate estimate, not a length


def load_with_av(path: Path, limits: AudioLimits) -> Audio:
    """Decode the first audio track with PyAV, block by block, under the duration cap."""
    import av

    try:
        container = av.open(str(path), options={"protocol_whitelist": "file", "format_whitelist": AV_DEMUXERS})
    except (av.FFmpegError, ValueError, UnicodeDecodeError) as e:
        raise AudioInputError(
            f"'{path.name}' is not an audio file this program can read, or it is damaged "
            f"({_without_path(str(e), path)}). Give a file in one of these formats: {FORMATS}."
        ) from e
    with container:
        if not container.streams.audio:
            raise AudioInputError(f"'{path.name}' has no audio track. Accepted formats: {FORMATS}.")
        stream = container.streams.audio[0]
        rate, channels = int(stream.codec_context.sample_rate or 0), int(stream.codec_context.channels or 0)
        if rate <= 0 or channels <= 0:
            raise AudioInputError(
                f"'{path.name}' declares {rate} Hz and {channels} channels; it is damaged. Re-export it."
            )
        demuxer = container.format.name
        source = Source(
            _av_format(demuxer, stream.codec_context.name, path),
            rate,
            channels,
            _av_declared_frames(container, stream, rate, path),
        )
        check_declared(path.name, source, limits)
        collector = Collector(path.name, source, limits)
        problems = _decode_av(container, stream, collector, path)
    if problems:
        logger.warning("damaged data in %s: %s", path.name, problems)
    check_complete(path.name, source, collector.frames, problems)  # a cut-off file often decodes without an error
    warnings = (
        (
            f"The decoder reported damaged data ({problems}); "
            + (
                "the audio that could be decoded is used: it may have gaps."
                if source.declared_frames is None
                else "all the audio the header states was decoded, but it may have glitches."
            ),
        )
        if problems
        else ()
    )
    return finish(path.name, source, collector, limits, warnings)


def _av_declared_frames(container, stream, rate: int, path: Path) -> int | None:
    """Frames the container states, or None where it does not know (a streamed FLAC or WebM) or only
    guesses from the bitrate (MP3 without a Xing header, raw AAC): an unknown length is unknown. An
    MP3 with a frame count (Xing/Info, VBRI) states its length: FFmpeg's duration then comes from that
    count, less the encoder's delay and padding."""
    import av

    demuxer = container.format.name.split(",")[0]
    if demuxer == "mp3" and mp3_stated_frames(path) is not None:
        pass  # stated: FFmpeg's stream duration is the frame count's
    elif demuxer in ESTIMATED_LENGTH_DEMUXERS:
        return None
    if stream.duration is not None and stream.time_base is not None and stream.duration > 0:
        return round(float(stream.duration * stream.time_base) * rate)
    if container.duration is not None and container.duration > 0:  # e.g. Matroska's segment duration
        return round(container.duration / av.time_base * rate)
    return None


_MP3_SEARCH_BYTES = 1 << 16  # where the first MPEG audio frame must begin (after any ID3v2 tag)


def mp3_stated_frames(path: Path) -> int | None:
    """The MPEG frame count an MP3's first frame states (a Xing/Info or VBRI header), or None when it
    states none (its length is then only a guess from the bitrate)."""
    try:
        with open(path, "rb") as f:
            head = f.read(10)
            start = 0
            if head[:3] == b"ID3" and len(head) == 10:  # ID3v2: a syncsafe size, plus a footer if flagged
                size = (head[6] & 0x7F) << 21 | (head[7] & 0x7F) << 14 | (head[8] & 0x7F) << 7 | (head[9] & 0x7F)
                start = 10 + size + (10 if head[5] & 0x10 else 0)
            f.seek(start)
            data = f.read(_MP3_SEARCH_BYTES)
    except OSError:
        return None
    for i in range(len(data) - 4):
        b1 = data[i + 1]
        if data[i] != 0xFF or b1 & 0xE0 != 0xE0 or (b1 >> 1) & 3 != 1:  # frame sync, Layer III
            continue
        version, mono = (b1 >> 3) & 3, (data[i + 3] >> 6) & 3 == 3
        if version == 1:  # reserved: not a frame header
            continue
        side_info = (17 if mono else 32) if version == 3 else (9 if mono else 17)
        xing = i + 4 + side_info
        if data[xing : xing + 4] in (b"Xing", b"Info") and data[xing + 7] & 1:
            return int.from_bytes(data[xing + 8 : xing + 12], "big")
        if data[i + 36 : i + 40] == b"VBRI":
            return int.from_bytes(data[i + 50 : i + 54], "big")
        return None  # the first frame states no count
    return None


def _decode_av(container, stream, collector: Collector, path: Path) -> str:
    """Feed every frame of ``stream`` to ``collector`` as packed float32; return what was damaged."""
    import av

    to_float = av.AudioResampler(format="flt")  # packed float32, same rate and layout
    deadline = time.monotonic() + AV_DECODE_TIMEOUT_S
    problems = []
    packets = container.demux(stream)
    while True:
        try:
            packet = next(packets)
            frames = packet.decode()
        except StopIteration:
            break
        except av.FFmpegError as e:  # damaged data: keep what decoded, then judge completeness
            problems.append(_without_path(str(e), path))
            if len(problems) > 100:
                break
            continue
        for frame in frames:
            for out in to_float.resample(frame):
                collector.add(out.to_ndarray().reshape(-1, out.layout.nb_channels))
        if time.monotonic() > deadline:
            raise AudioInputError(
                f"Decoding '{path.name}' took longer than {AV_DECODE_TIMEOUT_S} s. Convert it "
                "to WAV or FLAC and try again."
            )
    for out in to_float.resample(None):
        collector.add(out.to_ndarray().reshape(-1, out.layout.nb_channels))
    return "; ".join(problems[:3])


def _av_format(container: str, codec: str, path: Path) -> str:
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


def _without_path(text: str, path: Path) -> str:
    """ffmpeg's words with the file's full path (a server detail) replaced by its name."""
    for full in (f"file:{path.resolve()}", str(path.resolve()), str(path)):
        text = text.replace(full, path.name)
    return text
