"""MUSHRA (ITU-R BS.1534): the conditions of a test, their order per listener and screen, the
rating's range and the scale's words.

A MUSHRA screen plays the open **reference** (the original, named as such, not rated) and, in an
order of their own for every listener and every screen, the conditions to rate from 0 to 100: the
**hidden reference** (the original again, unnamed), the **3.5 kHz** and **7 kHz low-pass anchors**
(``core.anchors``) and up to :data:`MAX_CHOSEN` chosen conditions (the codec, ladder levels,
reference codecs, the second checkpoint). Every condition is a source id (``core.judging.sources``);
the hidden reference is the original's id. An item is one region of the clip: a test has one or
more, each its own screen.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from core.errors import CodecError

HIDDEN_REFERENCE = "original"  # the hidden reference is the original's source id
LOW_ANCHOR, MID_ANCHOR = "lp3.5", "lp7"  # the BS.1534 anchors (core.anchors' ids)
FIXED = (HIDDEN_REFERENCE, LOW_ANCHOR, MID_ANCHOR)  # in every MUSHRA test
MAX_CHOSEN = 6  # chosen conditions beside the fixed ones (BS.1534 advises no more than about 12 in all)
MAX_ITEMS = 12  # screens (regions) in one test
RATING_MIN, RATING_MAX = 0, 100
# the continuous quality scale: its five bands, from the bottom (each word covers 20 points)
SCALE = ("bad", "poor", "fair", "good", "excellent")


class MushraError(CodecError):
    """A MUSHRA test or rating that cannot be used; the message says what to do."""


@dataclass(frozen=True)
class Item:
    start_s: float  # the region of the clip this screen plays
    end_s: float


@dataclass(frozen=True)
class Plan:
    conditions: tuple[str, ...]  # source ids: the fixed ones, then the chosen ones
    items: tuple[Item, ...]  # one screen per item

    def to_dict(self) -> dict:
        return {"conditions": list(self.conditions), "items": [[i.start_s, i.end_s] for i in self.items]}

    @staticmethod
    def from_dict(d: dict) -> Plan:
        return Plan(tuple(d["conditions"]), tuple(Item(float(a), float(b)) for a, b in d["items"]))


def plan(chosen, items, known: set[str] | None = None) -> Plan:
    """A MUSHRA plan: the fixed conditions and ``chosen`` (source ids, at most MAX_CHOSEN, no repeat,
    each in ``known`` when given), over ``items`` (regions as (start_s, end_s))."""
    chosen = [str(c).strip() for c in chosen or () if str(c).strip()]
    extra = [c for c in chosen if c not in FIXED]
    if len(set(extra)) != len(extra):
        raise MushraError(f"Each condition can be rated once; {extra} repeats one. Pick each source once.")
    if len(extra) > MAX_CHOSEN:
        raise MushraError(
            f"A MUSHRA test rates at most {MAX_CHOSEN} chosen conditions besides the hidden reference and "
            f"the two anchors ({len(extra)} were chosen): leave some out, or make a second test."
        )
    if known is not None and (unknown := [c for c in extra if c not in known]):
        raise MushraError(f"Unknown condition ids {unknown}; the ones this result has: {sorted(known)}.")
    regions = [Item(float(a), float(b)) for a, b in items]
    if not 1 <= len(regions) <= MAX_ITEMS:
        raise MushraError(f"A MUSHRA test has 1 to {MAX_ITEMS} items (regions); {len(regions)} were given.")
    for r in regions:
        if not (math.isfinite(r.start_s) and math.isfinite(r.end_s) and 0 <= r.start_s < r.end_s):
            raise MushraError(f"An item's region must run from a start to a later end in seconds (got {r}).")
    return Plan((*FIXED, *extra), tuple(regions))


def order(conditions, seed: int, listener: str, screen: int) -> list[str]:
    """The conditions in the order ``listener`` meets them on ``screen``: random, different per
    listener and per screen, the same on every reload (the seed is the test's, kept secret)."""
    rng = random.Random(f"{seed}:{listener}:{screen}")
    shuffled = list(conditions)
    rng.shuffle(shuffled)
    return shuffled


def check_rating(value) -> int:
    """A rating as sent: a whole number from 0 to 100, else MushraError in words."""
    if isinstance(value, bool):
        raise MushraError(f"A rating is a whole number from {RATING_MIN} to {RATING_MAX} (got {value!r}).")
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number.is_integer() and RATING_MIN <= number <= RATING_MAX):
        raise MushraError(f"A rating is a whole number from {RATING_MIN} to {RATING_MAX} (got {value!r}).")
    return int(number)


def scale_word(score: float) -> str:
    """The scale's word for a score (an English id of the band: "bad" .. "excellent"); "" for NaN."""
    if not math.isfinite(score):
        return ""
    return SCALE[min(int(max(score, 0.0) // 20), len(SCALE) - 1)]
