"""Make a clip's anchors: each one that can be made, and for each one that cannot, why.

One anchor failing never stops the others: a missing encoder, a clip too short for a codec's
frames, or an encoder error each become a :class:`Problem` (English, with a reason code the page
translates) beside the anchors that were made.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from core.anchors.catalog import Anchor
from core.anchors.encoders import EncoderMissing, through_codec
from core.anchors.lowpass import lowpass
from core.codec import SAMPLE_RATE
from core.units import seconds_short_of

logger = logging.getLogger(__name__)

MISSING, TOO_SHORT, FAILED = "missing_encoder", "too_short", "failed"  # Problem.reason


@dataclass(frozen=True)
class AnchorAudio:
    anchor: Anchor
    samples: np.ndarray  # float32 mono at SAMPLE_RATE, sample-aligned with the original, same length
    bitrate_bps: float | None  # measured: the codec's bytes x 8 / the clip's duration (None: a filter)
    seconds: float  # time taken to make it

    @property
    def id(self) -> str:
        return self.anchor.id


@dataclass(frozen=True)
class Problem:
    anchor: Anchor
    reason: str  # MISSING, TOO_SHORT or FAILED
    message: str  # English, for the CLI and the logs: what happened and what to do

    def to_dict(self) -> dict:
        return {
            "id": self.anchor.id,
            "label": self.anchor.label,
            "reason": self.reason,
            "message": self.message,
            "min_seconds": self.anchor.min_seconds,
        }


@dataclass(frozen=True)
class AnchorSet:
    made: tuple[AnchorAudio, ...]
    problems: tuple[Problem, ...]
    seconds: float  # wall time of all of them


def make_anchors(
    samples: np.ndarray, anchors: Iterable[Anchor], progress: Callable[[float], None] | None = None
) -> AnchorSet:
    """Every anchor in ``anchors`` made from ``samples`` (float32 mono at SAMPLE_RATE)."""
    started = time.perf_counter()
    x = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
    anchors = list(anchors)
    made, problems = [], []
    for i, anchor in enumerate(anchors):
        if progress:
            progress(i / max(len(anchors), 1))
        try:
            made.append(make_one(x, anchor))
        except _Refused as e:
            problems.append(e.problem)
        except EncoderMissing as e:
            problems.append(Problem(anchor, MISSING, str(e)))
        except Exception as e:  # noqa: BLE001 - one encoder's failure leaves the other sources
            logger.exception("making the %s anchor failed", anchor.id)
            problems.append(
                Problem(
                    anchor,
                    FAILED,
                    f"{anchor.label} could not be made ({type(e).__name__}: {e}); the other sources were made.",
                )
            )
    for p in problems:
        logger.warning("anchor %s left out: %s", p.anchor.id, p.message)
    return AnchorSet(tuple(made), tuple(problems), time.perf_counter() - started)


class _Refused(Exception):
    def __init__(self, problem: Problem):
        super().__init__(problem.message)
        self.problem = problem


def make_one(x: np.ndarray, anchor: Anchor) -> AnchorAudio:
    """One anchor of ``x``; raises EncoderMissing, or _Refused for a clip it cannot take."""
    started = time.perf_counter()
    duration = x.size / SAMPLE_RATE
    if duration < anchor.min_seconds:
        raise _Refused(
            Problem(
                anchor,
                TOO_SHORT,
                f"{anchor.label} needs at least {anchor.min_seconds:g} s of audio: on a {seconds_short_of(duration, anchor.min_seconds)} s clip its "
                "frames and look-ahead would be too large a share for its stated bitrate to hold. It was left out; "
                "the other sources were made.",
            )
        )
    if anchor.kind == "lowpass":
        assert anchor.cutoff_hz is not None
        return AnchorAudio(anchor, lowpass(x, anchor.cutoff_hz), None, time.perf_counter() - started)
    encoded = through_codec(x, anchor)
    bitrate = encoded.payload_bytes * 8 / duration
    return AnchorAudio(anchor, encoded.samples, bitrate, time.perf_counter() - started)
