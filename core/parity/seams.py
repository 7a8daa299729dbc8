"""Where common decoders join their chunks, where an error starts, and clicks.

Seams of the decoders people run: the official ``chunked_decode`` cuts the codes into
``OFFICIAL_CHUNK_FRAMES`` (300-frame, 24 s) chunks, each decoded again from ``OFFICIAL_CONTEXT_FRAMES``
(25) frames of left context, fewer than the decoder's ``WINDOW_FRAMES`` (72-frame) attention window,
so after every seam the first 72 frames see less history than a whole decode gives them (one serving
project removed its seam noise by raising the context to 72 frames). This workbench's decode carries
every layer's state across its chunks, so it has no seams.

An onset is a frame where the difference from the reference starts or jumps (a decoder that restarts
there); a click is a sample-to-sample jump in the difference far above what the difference does around it
(what a listener hears as a pop), most often at a seam.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME

OFFICIAL_CHUNK_FRAMES = 300  # qwen_tts chunked_decode's default chunk
OFFICIAL_CONTEXT_FRAMES = 25  # ... and its left context
WINDOW_FRAMES = 72  # the decoder's sliding attention window (config sliding_window)
ONSET_JUMP = 8.0  # a frame whose error is this many times the previous frame's (and over the threshold)
MAX_ONSETS = 200  # onsets kept (a 1-frame-chunk decoder has one at every frame)
CLICK_RATIO = 8.0  # a jump in the difference this many times the difference's level around it
CLICK_MIN_LSB = 64.0  # ... and at least this many 16-bit steps (-54 dBFS)
CLICK_BLOCK = 240  # samples per block of the local level (10 ms)
CLICK_SPACING = 120  # samples: jumps closer than this are one click (5 ms)
MAX_CLICKS = 50  # clicks listed (the largest)
AT_SEAM_SAMPLES = 48  # a click this close to a seam or frame boundary is "at" it (2 ms)


@dataclass(frozen=True)
class Click:
    time_s: float
    sample: int  # in our audio
    height_lsb: float  # the jump, in 16-bit steps
    ratio: float  # the jump against the difference's level around it
    seam: (
        str | None
    )  # "official" (a 300-frame seam), "onset" (where the error starts), "frame" (a frame boundary) or None

    def to_dict(self) -> dict:
        return asdict(self)


def official_seams(frames: int) -> list[int]:
    """The frames where the official ``chunked_decode`` starts a new chunk (300, 600, ...)."""
    return list(range(OFFICIAL_CHUNK_FRAMES, frames, OFFICIAL_CHUNK_FRAMES))


def frame_errors(diff: np.ndarray, per_frame: int = SAMPLES_PER_FRAME) -> np.ndarray:
    """max |difference| of each frame of ``per_frame`` samples (3,840 at 48 kHz; the last one possibly partial)."""
    pad = (-diff.size) % per_frame
    return np.abs(np.pad(diff, (0, pad))).reshape(-1, per_frame).max(axis=1)


def onsets(errors: np.ndarray, threshold: float) -> list[int]:
    """Frames whose error passes ``threshold`` and is at least ``ONSET_JUMP`` times the frame before."""
    before = np.concatenate([[0.0], errors[:-1]])
    hits = np.flatnonzero((errors > threshold) & (errors > ONSET_JUMP * np.maximum(before, threshold / ONSET_JUMP)))
    return [int(f) for f in hits[:MAX_ONSETS]]


def local_level(jump: np.ndarray) -> np.ndarray:
    """Per ``CLICK_BLOCK`` block, the median RMS of ``jump`` in the two blocks on each side (not the block
    itself): what the difference does around a sample (a pop stands out of it)."""
    pad = (-jump.size) % CLICK_BLOCK
    blocks = np.sqrt(np.mean(np.square(np.pad(jump, (0, pad))).reshape(-1, CLICK_BLOCK), axis=1))
    padded = np.pad(blocks, 2, mode="edge")
    sides = np.stack([padded[:-4], padded[1:-3], padded[3:-1], padded[4:]])
    return np.median(sides, axis=0)


def clicks(
    diff: np.ndarray,
    lsb: float,
    seams: list[int],
    onset_frames: list[int],
    per_frame: int = SAMPLES_PER_FRAME,
    rate_hz: int = SAMPLE_RATE,
) -> list[Click]:
    """Jumps in ``diff`` (theirs - ours, aligned, at ``rate_hz``) far above what the difference does around
    them; each named by the seam it sits at (``seams``: official seam frames, ``onset_frames``: where the
    error starts)."""
    jump = np.abs(np.diff(diff, prepend=diff[:1]))
    level = np.repeat(local_level(jump), CLICK_BLOCK)[: jump.size]
    floor = CLICK_MIN_LSB * lsb
    candidates = np.flatnonzero((jump > floor) & (jump > CLICK_RATIO * level))
    if candidates.size == 0:
        return []
    groups = np.split(candidates, np.flatnonzero(np.diff(candidates) > CLICK_SPACING) + 1)
    peaks = [int(g[np.argmax(jump[g])]) for g in groups]
    peaks = sorted(peaks, key=lambda i: -float(jump[i]))[:MAX_CLICKS]
    official = np.array(seams, dtype=np.int64) * per_frame
    started = np.array(onset_frames, dtype=np.int64) * per_frame
    found = []
    for i in sorted(peaks):
        found.append(
            Click(
                round(i / rate_hz, 4),
                i,
                round(float(jump[i]) / lsb, 1),
                round(float(jump[i]) / max(float(level[i]), lsb), 1),
                _seam_at(i, official, started, per_frame),
            )
        )
    return found


def _seam_at(sample: int, official: np.ndarray, started: np.ndarray, per_frame: int = SAMPLES_PER_FRAME) -> str | None:
    if official.size and np.min(np.abs(official - sample)) <= AT_SEAM_SAMPLES:
        return "official"
    if started.size and np.min(np.abs(started - sample)) <= AT_SEAM_SAMPLES:
        return "onset"
    edge = sample % per_frame
    if min(edge, per_frame - edge) <= AT_SEAM_SAMPLES:
        return "frame"
    return None


def named_seam(frame: int) -> str | None:
    """Which common decoder puts a seam at ``frame``: "official" (a multiple of 300), "context" (frame 26:
    where 25 frames of left context first cut history, for chunks shorter than 26 frames), "window"
    (frame 73: the same for a 72-frame context), or None."""
    if frame > 0 and frame % OFFICIAL_CHUNK_FRAMES == 0:
        return "official"
    if frame == OFFICIAL_CONTEXT_FRAMES + 1:
        return "context"
    if frame == WINDOW_FRAMES + 1:
        return "window"
    return None
