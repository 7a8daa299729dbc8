"""Comparing audio made at different rates: every version of a clip at one common rate.

A round trip through a 48 kHz decoder writes 48 kHz audio; the original was heard by the encoder at
24 kHz; a second checkpoint beside it may write 24 kHz; the anchors are made from the 24 kHz clip. A
listener flips between them at the same moment and the metrics compare them sample by sample, so they
all go to one rate first (:func:`comparison_rate`: the highest any decoder writes, at least 24 kHz),
each resampled from its own rate (soxr, high quality) and cut or padded to the same length. Loudness
matching then happens at that rate like any other (``core.audio.loudness``).

The original at that rate comes from the file itself where the file holds more than 24 kHz
(``Audio.kept``, read beside the 24 kHz copy); a clip recorded at 24 kHz or less holds nothing above
its own Nyquist, and :class:`Band` says so: nothing above 12 kHz can be compared then.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import soxr

from core.audio.blocks import RESAMPLE_QUALITY, Audio
from core.codec import SAMPLE_RATE
from core.settings import AudioLimits


@dataclass(frozen=True)
class Band:
    """What a comparison at ``rate_hz`` can show: the original's own band reaches ``original_top_hz``."""

    rate_hz: int  # the common rate of every version
    original_top_hz: float  # the highest frequency the original really holds (its own Nyquist, at most rate/2)

    @property
    def above_24k_input(self) -> bool:
        """The original holds something above the 12 kHz the encoder hears (a 44.1 or 48 kHz file)."""
        return self.original_top_hz > SAMPLE_RATE / 2

    def to_dict(self) -> dict:
        return {"rate_hz": self.rate_hz, "original_top_hz": self.original_top_hz}


def comparison_rate(output_rates: Iterable[int]) -> int:
    """The rate versions are compared and played at: the highest of the decoders' rates, at least 24 kHz."""
    return max([SAMPLE_RATE, *(int(r) for r in output_rates)])


def limits_keeping(limits: AudioLimits, rate_hz: int) -> AudioLimits:
    """``limits`` that also keep a file above 24 kHz at ``rate_hz`` (nothing more is kept at 24 kHz)."""
    return dataclasses.replace(limits, keep_rate_hz=rate_hz if rate_hz > SAMPLE_RATE else None)


def length_at(samples_24k: int, rate_hz: int) -> int:
    """Samples at ``rate_hz`` that last as long as ``samples_24k`` samples at 24 kHz."""
    return int(round(samples_24k * rate_hz / SAMPLE_RATE))


def to_rate(x, from_hz: int, to_hz: int, length: int | None = None) -> np.ndarray:
    """``x`` (mono float) from ``from_hz`` to ``to_hz``, cut or zero-padded to ``length`` samples when given;
    the same samples (a float32 copy) when the rates are equal."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)
    out = x.copy() if from_hz == to_hz else soxr.resample(x, from_hz, to_hz, quality=RESAMPLE_QUALITY)
    out = np.asarray(out, dtype=np.float32)
    if length is None or out.size == length:
        return out
    if out.size > length:
        return np.ascontiguousarray(out[:length])
    return np.concatenate([out, np.zeros(length - out.size, np.float32)])


def original_at(audio: Audio, rate_hz: int) -> tuple[np.ndarray, Band]:
    """The original at ``rate_hz``, as long as its 24 kHz copy, and the band it really holds: the file's
    own samples where they were kept at that rate (``AudioLimits.keep_rate_hz``), else the 24 kHz copy."""
    length = length_at(audio.samples.size, rate_hz)
    if audio.kept is not None and audio.kept_rate_hz == rate_hz:
        top = min(audio.facts.sample_rate, rate_hz) / 2
        return to_rate(audio.kept, rate_hz, rate_hz, length), Band(rate_hz, top)
    top = min(audio.facts.sample_rate, SAMPLE_RATE, rate_hz) / 2
    return to_rate(audio.samples, SAMPLE_RATE, rate_hz, length), Band(rate_hz, top)


def read_at(path, limits: AudioLimits, rate_hz: int) -> np.ndarray:
    """A WAV (or any audio file) as mono at ``rate_hz``: its own samples where the file holds more than 24 kHz
    (a 48 kHz reconstruction read back stays 48 kHz), else its 24 kHz reading resampled."""
    from core.audio.files import load_audio

    audio = load_audio(path, limits_keeping(limits, rate_hz))
    if audio.kept is not None and audio.kept_rate_hz == rate_hz:
        return audio.kept  # the file's own samples, every one (its FLAC copy is then the file's)
    return original_at(audio, rate_hz)[0]


def rate_of_files(paths) -> int:
    """The common rate of files to be played and compared together: the highest of their own rates, at
    least 24 kHz (a file that cannot be read counts as 24 kHz: reading it later says what is wrong)."""
    import soundfile as sf

    found = []
    for path in paths:
        try:
            found.append(int(sf.info(str(path)).samplerate))
        except (sf.SoundFileError, RuntimeError, OSError):
            continue
    return comparison_rate(found)
