"""What a live session gives back: per pushed block (:class:`LiveStep`) and once stopped
(:class:`LiveResult`, with the session's timing figures)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.audio.blocks import Audio
from core.audio.rates import to_rate
from core.codec import FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME, ceil_div


@dataclass(frozen=True)
class LiveStep:
    """What one pushed block gave back."""

    codes: np.ndarray  # (frames, 16) the frames this block completed (often 0 or 1)
    samples: np.ndarray  # float32 24 kHz audio of those frames (frames * 1920 samples)
    original: np.ndarray  # the 24 kHz input of the same frames (zero-padded at the end): for A/B listening
    compute_s: float  # model work for this block, lock held (encode + decode)
    wait_s: float  # time spent waiting for the engine's lock (another user's job)
    received_s: float  # seconds of input received so far


@dataclass(frozen=True)
class LiveResult:
    """A stopped session: the recording as the codec heard it, its codes and the streamed audio."""

    recording: Audio  # 24 kHz mono with its facts (rate, channels, clipping, silence)
    codes: np.ndarray  # (frames, 16), equal to Engine.encode of ``recording.samples``
    reconstruction: np.ndarray  # float32 at the decoder's rate, trimmed to the recording's duration
    stats: dict = field(default_factory=dict)  # frames, compute per frame, real-time factor
    reconstruction_rate_hz: int = SAMPLE_RATE  # the decoder's rate (48000: 3,840 samples a frame)


def session_result(session, recording: Audio) -> LiveResult:
    """A stopped session's recording, codes, streamed audio and timing figures."""
    frames = sum(c.shape[0] for c in session.codes)
    codes = np.concatenate(session.codes) if frames else np.zeros((0, NUM_CODEBOOKS), np.int64)
    audio = np.concatenate(session.audio) if session.audio else np.zeros(0, np.float32)
    per_frame = np.array(session.frame_compute_s or [0.0])
    stats = {
        "frames": frames,
        "seconds": recording.samples.size / SAMPLE_RATE,
        "compute_ms_median": float(np.median(per_frame) * 1000),
        "compute_ms_p95": float(np.percentile(per_frame, 95) * 1000),
        "realtime_factor": float(per_frame.sum() / max(recording.samples.size / SAMPLE_RATE, 1e-9)),
        "waited_for_jobs_s": session.waited_job_s,
        "waited_for_live_s": session.waited_live_s,
    }
    out_per_frame = audio.size // frames if frames else SAMPLES_PER_FRAME  # 3,840 for a 48 kHz decoder
    kept = ceil_div(recording.samples.size * out_per_frame, SAMPLES_PER_FRAME)  # the recording's duration
    return LiveResult(recording, codes, audio[:kept], stats, round(out_per_frame * FRAME_RATE))


def heard_at(pending: np.ndarray, count: int, out_per_frame: int) -> tuple[np.ndarray, np.ndarray]:
    """(the 24 kHz input behind ``count`` decoded samples, at the decoder's rate; the input left over). A
    48 kHz decoder makes 3,840 samples a frame from 1,920 input samples: the input is resampled up to line up
    with them (the page plays both at the same moment); missing input is silence."""
    n = count * SAMPLES_PER_FRAME // out_per_frame
    out = pending[:n] if pending.size >= n else np.pad(pending, (0, n - pending.size))
    if n != count:
        out = to_rate(out, SAMPLE_RATE, round(out_per_frame * FRAME_RATE), count)
    return out, pending[n:]
