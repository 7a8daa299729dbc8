"""The codec's facts and rules, in one place: rates, sizes, and what valid codes look like.

Every other module takes these from here. ``SAMPLE_RATE`` and ``SAMPLES_PER_FRAME`` are the encoder's
*input* (24 kHz, the same for every checkpoint of the family); the rate a decoder writes is a fact of the
loaded checkpoint, an :class:`OutputRate` (``core.model.family.output_rate_of``), 24 kHz for the published
decoder (``BASE_OUTPUT``) and 48 kHz for the community one. The rules (``codes_problem``, ``length_problem``,
``check_codes``) are the one definition of "codes the codec can have made", shared by the
engine (before decoding) and the token file reader (before trusting a file).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.errors import TokenFileError
from core.units import minutes

SAMPLE_RATE = 24_000  # Hz, the encoder's input rate (every decoder of the family reads the same codes)
SAMPLES_PER_FRAME = 1920  # 24 kHz input samples per code frame
FRAME_RATE = SAMPLE_RATE / SAMPLES_PER_FRAME  # code frames per second (12.5)
FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE  # seconds of audio per code frame (0.08)
SAMPLES_PER_STEP = 960  # 24 kHz samples per encoder transformer step (25 steps/s, two per frame)
NUM_CODEBOOKS = 16  # codebooks per frame (residual quantizers the 12 Hz tokenizer keeps)
CODEBOOK_SIZE = 2048  # entries per codebook: codes are 0..2047
BITS_PER_CODE = 11  # log2(CODEBOOK_SIZE)


@dataclass(frozen=True)
class OutputRate:
    """The rate a decoder writes and its samples per code frame (``rate_hz / samples_per_frame`` is
    always the codes' 12.5 frames/s)."""

    rate_hz: int  # output samples per second
    samples_per_frame: int  # output samples per code frame

    @property
    def label(self) -> str:
        """The rate as people say it: "24 kHz", "48 kHz", "44.1 kHz"."""
        return f"{self.rate_hz / 1000:g} kHz"

    @property
    def per_input_sample(self) -> float:
        """Output samples per 24 kHz input sample (1 for the base decoder, 2 for the 48 kHz one)."""
        return self.samples_per_frame / SAMPLES_PER_FRAME

    def samples_for(self, input_samples: int) -> int:
        """Output samples that cover ``input_samples`` input samples (a clip's own duration)."""
        return ceil_div(int(input_samples) * self.samples_per_frame, SAMPLES_PER_FRAME)

    def frames_to_samples(self, frames: int) -> int:
        return int(frames) * self.samples_per_frame


BASE_OUTPUT = OutputRate(SAMPLE_RATE, SAMPLES_PER_FRAME)  # the published decoder: 24 kHz, 1,920 samples a frame

Progress = Callable[[float], None]  # progress(share of a job done, 0..1), called as long jobs go


def code_bits(frames: int, codebooks: int = NUM_CODEBOOKS) -> int:
    """Bits of ``frames`` frames of codes with the first ``codebooks`` codebooks kept."""
    return frames * codebooks * BITS_PER_CODE


def bitrate_bps(codebooks: int = NUM_CODEBOOKS) -> float:
    """Bit/s of codes with the first ``codebooks`` codebooks kept: 137.5 per codebook, 2200 for all."""
    return FRAME_RATE * code_bits(1, codebooks)


def ceil_div(a: int, b: int) -> int:
    """⌈a / b⌉ for integers, without floats (exact for any size)."""
    return -(-a // b)


def num_frames(num_samples: int) -> int:
    """Frames the encoder emits for ``num_samples`` samples (it pads the last frame)."""
    return ceil_div(num_samples, SAMPLES_PER_FRAME)


def codes_problem(codes: np.ndarray) -> str | None:
    """Why ``codes`` cannot be codec output, or None."""
    if codes.ndim != 2 or codes.shape[1] != NUM_CODEBOOKS:
        return f"codes must have shape (frames, {NUM_CODEBOOKS}), not {codes.shape}"
    if codes.shape[0] == 0:
        return "there are no codes (zero frames)"
    if not np.issubdtype(codes.dtype, np.integer):
        return f"codes must be integers, not {codes.dtype}"
    low, high = int(codes.min()), int(codes.max())
    if low < 0 or high >= CODEBOOK_SIZE:
        return f"codes must be in 0..{CODEBOOK_SIZE - 1}, found values {low}..{high}"
    return None


def length_problem(frames: int, original_samples) -> str | None:
    """Why ``original_samples`` cannot go with ``frames`` frames, or None. The encoder pads the
    input to whole frames, so frames == ceil(original_samples / 1920); only integers count
    (1920.0 is refused: a float length means the metadata was not written by us)."""
    low, high = (frames - 1) * SAMPLES_PER_FRAME, frames * SAMPLES_PER_FRAME
    if isinstance(original_samples, bool) or not isinstance(original_samples, (int, np.integer)):
        return f"original_samples must be an integer, not {original_samples!r}"
    if not low < original_samples <= high:
        return f"original_samples = {original_samples} does not fit {frames} frames (expected {low + 1}..{high})"
    return None


def check_codes(codes, original_samples=None) -> np.ndarray:
    """Codes as an int64 array (frames, 16) the codec can have made, or TokenFileError saying why;
    with ``original_samples``, also the length they decode to."""
    array = np.asarray(codes)
    problem = codes_problem(array)
    if problem is None and original_samples is not None:
        problem = length_problem(array.shape[0], original_samples)
        if problem:
            problem += "; the codes and the length come from different clips"
    if problem:
        raise TokenFileError(f"These codes cannot be decoded: {problem}.")
    return array.astype(np.int64)


def check_duration(frames: list[int], max_duration_s: float) -> None:
    """Codes obey the audio input's duration limit, whatever brought them (a 2 KB token file can
    hold hours of codes); TokenFileError naming the limit and its flag otherwise."""
    for n in frames:
        seconds = n * SAMPLES_PER_FRAME / SAMPLE_RATE
        if n > num_frames(math.floor(max_duration_s * SAMPLE_RATE)):  # a clip at the limit pads its last frame
            raise TokenFileError(
                f"These codes decode to {minutes(seconds)} of audio, over the {minutes(max_duration_s)} limit "
                "(--max-duration / CODEC_MAX_DURATION_S). Decode a shorter token file, or ask the operator "
                "to raise the limit."
            )
