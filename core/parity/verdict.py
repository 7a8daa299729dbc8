"""The verdict of a decode-parity check, in words: identical, rounding only (with its level), or
differs from a time with the likely cause (a seam, padding, precision, lost samples, silence, an
overflow) and the evidence for it. Pure function of the measurements (``core.parity.decode_parity``).

Levels, in 16-bit steps (LSB, 1/32768 of full scale): identical is at most ``IDENTICAL_LSB`` (float
rounding, ≈1e-6); rounding only is at most ``ROUNDING_LSB`` (writing 16-bit PCM rounds by ≤ 0.5 LSB,
truncating by ≤ 1; a resampler's rounding also lands here); more is a difference.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from core.codec import SAMPLES_PER_FRAME
from core.parity import seams
from core.parity.words import Note

LSB = 1.0 / 32768  # one step of 16-bit PCM (full scale 1.0)
IDENTICAL_LSB = 0.03  # ≈1e-6 of full scale: float rounding
ROUNDING_LSB = 2.0  # 16-bit rounding (≤ 0.5), truncation (≤ 1), a resampler's rounding
SEAM_EDGE = SAMPLES_PER_FRAME // 8  # a first difference this close after a frame boundary starts "at" it
SPREAD_SHARE = 0.5  # precision: at least this share of the frames after the first difference differ
SILENT_DBFS = -70.0  # their audio below this RMS, the reference above it + 20 dB: silent output
ACTIVE_DBFS = -50.0  # the reference frame before a seam onset is at least this loud (else it may just be quiet)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "identical", "rounding" or "differs"
    cause: str | None  # differs: seam, click, padding, precision, resampling, length, silence, nonfinite or other
    level_lsb: int | None  # rounding: the level (≤ this many LSB)
    time_s: float | None  # differs: where (the first difference)
    frame: int | None
    headline: Note
    evidence: tuple[Note, ...]  # why, and what was done to the inputs

    @property
    def sentence(self) -> str:
        return " ".join([self.headline.english(), *(n.english() for n in self.evidence)])

    def to_dict(self) -> dict:
        out = asdict(self)
        out["headline"] = self.headline.to_dict()
        out["evidence"] = [n.to_dict() for n in self.evidence]
        out["sentence"] = self.sentence
        return out


def _dbfs(rms: float) -> float:
    return 20 * math.log10(rms) if rms > 0 else -math.inf


def _fmt(x: float, unit: str = "") -> str:
    if x is None or math.isnan(x):
        return "n/a"
    return "∞" if math.isinf(x) else f"{x:.6f}" if not unit else f"{x:.1f} {unit}"


def judge(r, ours: np.ndarray, diff: np.ndarray):
    """``r`` (a DecodeParity without a verdict) with its verdict; ``ours`` and ``diff`` (theirs - ours,
    aligned, over our length) are the signals it was measured on."""
    notes: list[Note] = [*r.codes.notes, *r.their.notes]
    a = r.alignment
    if a.offset_samples:
        direction = "offset_late" if a.offset_samples > 0 else "offset_early"
        notes.append(
            Note("offset", {"samples": abs(a.offset_samples), "direction_code": direction, "peak": a.correlation})
        )
    if a.polarity < 0:
        notes.append(Note("polarity"))
    if r.trimmed:
        notes.append(Note("trimmed", {"samples": r.reference_samples}))
    if r.delay_cut_samples:
        notes.append(Note("delay_cut", {"samples": r.delay_cut_samples}))
    if r.length_difference:
        more = "more" if r.length_difference > 0 else "fewer"
        notes.append(
            Note(
                "length",
                {
                    "samples": abs(r.length_difference),
                    "more_or_less_code": more,
                    "frames": r.frames,
                    "reference": r.reference_samples,
                },
            )
        )
    if r.their.nonfinite:
        notes.append(Note("nonfinite", {"count": r.their.nonfinite, "time_s": r.their.first_nonfinite_s or 0.0}))
    levels = Note(
        "levels",
        {
            "seconds": r.compared_samples / r.rate_hz,
            "correlation": _fmt(r.correlation),
            "snr": _fmt(r.snr_db, "dB"),
            "max_lsb": r.max_abs_lsb,
        },
    )
    if r.max_abs_lsb <= ROUNDING_LSB and not r.length_difference and not r.their.nonfinite:
        if r.max_abs_lsb <= IDENTICAL_LSB:
            return replace(r, verdict=Verdict("identical", None, None, None, None, Note("identical"), (*notes, levels)))
        level = max(1, math.ceil(r.max_abs_lsb - 1e-9))
        head = Note("rounding", {"level": level})
        return replace(r, verdict=Verdict("rounding", None, level, None, None, head, (*notes, levels)))
    cause, why = _cause(r, ours, diff)
    first = r.first_difference_sample
    notes += why
    notes += _seam_notes(r)
    notes.append(levels)
    if first is None:  # only the length differs
        head = Note("differs_length", {"cause_code": f"cause_{cause}"})
        return replace(r, verdict=Verdict("differs", cause, None, None, None, head, tuple(notes)))
    frame = first // r.samples_per_frame
    head = Note("differs", {"time_s": first / r.rate_hz, "frame": frame, "cause_code": f"cause_{cause}"})
    return replace(r, verdict=Verdict("differs", cause, None, round(first / r.rate_hz, 4), frame, head, tuple(notes)))


def _cause(r, ours: np.ndarray, diff: np.ndarray) -> tuple[str, list[Note]]:
    """The likely cause of a difference and its evidence, most specific first."""
    if r.their.nonfinite:
        return "nonfinite", []
    their_db, ref_db = _dbfs(r.their_rms), _dbfs(r.reference_rms)
    if their_db < SILENT_DBFS and ref_db > SILENT_DBFS + 20:
        return "silence", [Note("silence", {"their_db": max(their_db, -200.0), "reference_db": ref_db})]
    offsets = [d.offset_samples for d in r.drift]
    if offsets and max(offsets) != min(offsets):
        start, end = r.drift[0], r.drift[-1]
        return "length", [
            Note(
                "drift",
                {
                    "start": start.offset_samples,
                    "start_s": start.time_s,
                    "end": end.offset_samples,
                    "end_s": end.time_s,
                    "change": end.offset_samples - start.offset_samples,
                },
            )
        ]
    first = r.first_difference_sample
    if first is None:
        return "length", []
    frame, into = divmod(first, r.samples_per_frame)
    their_end = r.their_samples - r.alignment.offset_samples  # in our samples
    if r.length_difference < 0 and first >= their_end - SEAM_EDGE:
        return "length", [Note("ends_early", {"time_s": their_end / r.rate_hz})]
    errors = seams.frame_errors(diff, r.samples_per_frame)
    after = errors[frame:]
    spread = float(np.mean(after > ROUNDING_LSB * LSB)) if after.size else 0.0
    before = ours[max(0, (frame - 1) * r.samples_per_frame) : frame * r.samples_per_frame]
    active = before.size > 0 and _dbfs(float(np.sqrt(np.mean(np.square(before, dtype=np.float64))))) > ACTIVE_DBFS
    if frame > 0 and into <= SEAM_EDGE * r.samples_per_frame // SAMPLES_PER_FRAME and active:
        why = [Note("seam_onset", {"into": into, "frame": frame})]
        named = seams.named_seam(frame)
        if named:
            why.append(Note(f"seam_{named}", {"frame": frame}))
        return "seam", why
    near = [c for c in r.clicks if abs(c.sample - first) <= seams.CLICK_SPACING]
    if near:  # one jump where the difference starts (a click at a seam is the seam's, above)
        return "click", [Note("click_first", {"time_s": near[0].time_s, "height": near[0].height_lsb})]
    zero = [f for f in (frame, frame - 1) if 0 <= f < r.frames and (r.codes.codes[f] == 0).any()]
    if zero and frame > 0:
        books = ", ".join(str(int(b) + 1) for b in np.flatnonzero(r.codes.codes[zero[0]] == 0))
        return "padding", [Note("padding_zero", {"frame": zero[0], "books": books})]
    if frame >= r.frames - 2 and frame > 0:
        return "padding", [Note("padding_tail", {"frames": r.frames - frame})]
    if frame <= 1 and spread >= SPREAD_SHARE:
        return "resampling" if r.their.resampled else "precision", [
            Note(
                "precision_spread",
                {"share": spread, "threshold": ROUNDING_LSB, "snr": r.snr_db if math.isfinite(r.snr_db) else 0.0},
            )
        ]
    return "other", []


def _seam_notes(r) -> list[Note]:
    notes = []
    if len(r.onsets) > 1:
        listed = ", ".join(str(f) for f in r.onsets[:8]) + (", …" if len(r.onsets) > 8 else "")
        notes.append(Note("onsets", {"count": len(r.onsets), "listed": listed}))
    if r.official_seams:
        hit = sum(1 for f in r.official_seams if f in set(r.onsets))
        if hit:
            notes.append(Note("official_seams_hit", {"hit": hit, "count": len(r.official_seams)}))
    if r.clicks:
        top = max(r.clicks, key=lambda c: c.height_lsb)
        at = sum(1 for c in r.clicks if c.seam)
        notes.append(
            Note("clicks", {"count": len(r.clicks), "at_seams": at, "height": top.height_lsb, "time_s": top.time_s})
        )
    return notes
