"""Encode parity: the codes another encoder made from some audio against this workbench's reference
encode of the same audio (``Engine.encode``: the whole-clip encode in strict fp32, exact at any length).

Code agreement per codebook (``core.analysis.token_usage.agreement``), the first frame that differs and
in which codebook, the frame counts, and the likely reason in words (``core.parity.words``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.analysis.token_usage import agreement
from core.audio.files import load_audio
from core.codec import FRAME_RATE, NUM_CODEBOOKS
from core.parity.inputs import Codes, load_codes
from core.parity.words import Note

logger = logging.getLogger(__name__)

UNRELATED = 0.2  # below this share of equal codes, the codes are of other audio
LOW_BOOKS_GAP = 0.1  # codebook 1 this much better than the rest: small numeric differences amplified


@dataclass(frozen=True)
class EncodeParity:
    ours_frames: int
    their_frames: int
    agreement: list[float]  # per codebook, over the frames both have
    first_difference_frame: int | None
    first_difference_codebook: int | None  # 1-based
    identical: bool
    notes: tuple[Note, ...]
    seconds: float  # the reference encode

    @property
    def overall(self) -> float:
        return float(np.mean(self.agreement)) if self.agreement else 0.0

    @property
    def sentence(self) -> str:
        return " ".join(n.english() for n in self.notes)

    def to_dict(self) -> dict:
        return {
            "identical": self.identical,
            "ours_frames": self.ours_frames,
            "their_frames": self.their_frames,
            "agreement": self.agreement,
            "overall": round(self.overall, 6),
            "first_difference_frame": self.first_difference_frame,
            "first_difference_codebook": self.first_difference_codebook,
            "notes": [n.to_dict() for n in self.notes],
            "sentence": self.sentence,
            "reference_encode_s": round(self.seconds, 3),
        }


def compare(ours: np.ndarray, theirs: Codes, seconds: float = 0.0) -> EncodeParity:
    """Their codes against ``ours`` (frames, 16)."""
    codes = theirs.codes
    n = min(ours.shape[0], codes.shape[0])
    same = ours[:n] == codes[:n]
    rows = np.flatnonzero(~same.all(axis=1))
    first = int(rows[0]) if rows.size else None
    book = int(np.argmin(same[first])) + 1 if first is not None else None
    shares = [round(v, 6) for v in agreement(ours, codes)]
    identical = first is None and ours.shape[0] == codes.shape[0]
    notes: list[Note] = list(theirs.notes)
    overall = float(np.mean(shares))
    if identical:
        notes.append(Note("encode_identical", {"frames": n, "codebooks": NUM_CODEBOOKS}))
    else:
        if first is not None:
            notes.append(
                Note("encode_differs", {"frame": first, "time_s": first / FRAME_RATE, "book": book, "agree": overall})
            )
        if codes.shape[0] != ours.shape[0]:
            gap = codes.shape[0] - ours.shape[0]
            hint = "frames_hint_more" if gap == 1 else "frames_hint_fewer" if gap == -1 else "frames_hint_far"
            notes.append(
                Note("encode_frames", {"theirs": codes.shape[0], "ours": ours.shape[0], "frames_hint_code": hint})
            )
        if first is not None and first == n - 1:
            notes.append(Note("encode_last_only"))
        elif overall < UNRELATED:
            notes.append(Note("encode_unrelated", {"agree": overall}))
        elif first is not None and shares[0] - float(np.mean(shares[1:])) > LOW_BOOKS_GAP:
            notes.append(Note("encode_low_books", {"first": shares[0], "later": float(np.mean(shares[1:]))}))
        notes.append(Note("encode_tf32"))
    return EncodeParity(ours.shape[0], codes.shape[0], shares, first, book, identical, tuple(notes), seconds)


def check_encode(engine, audio_path, codes_path) -> EncodeParity:
    """Read the audio (within the engine's limits) and their codes, encode with the engine, compare."""
    limits = engine.settings.audio_limits()
    theirs = load_codes(Path(codes_path), limits.max_duration_s)
    audio = load_audio(Path(audio_path), limits)
    encoded = engine.encode(audio)
    result = compare(encoded.codes, theirs, encoded.seconds)
    logger.info("encode parity: %s", result.sentence)
    return result
