"""What the engine's jobs return: plain frozen records of numpy arrays and timings, so callers
(the web UI's jobs, the CLI, the dataset pipeline) need nothing from the engine to read them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EncodeResult:
    codes: np.ndarray  # (frames, 16) int64, values 0..2047
    original_samples: int  # samples of the 24 kHz input (decode can trim to this)
    seconds: float  # wall time of the model work
    peak_mib: float | None  # peak GPU memory during the job (None on CPU)


@dataclass(frozen=True)
class DecodeResult:
    samples: np.ndarray  # float32 mono at the decoder's rate
    sample_rate: int  # the decoder's output rate: 24000 for the published one, 48000 for the 48 kHz one
    seconds: float  # wall time of the model work
    peak_mib: float | None  # peak GPU memory during the job (None on CPU)
    warnings: tuple[str, ...] = ()  # for the user, e.g. bf16 chunks that were redone in fp32


@dataclass(frozen=True)
class RoundTripResult:
    encoded: EncodeResult  # the codes
    decoded: DecodeResult  # the reconstruction at the decoder's rate, trimmed to the input's duration
