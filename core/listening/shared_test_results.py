"""Results pooled over the listeners of a shared test: MUSHRA per condition (mean, 95 % t interval,
the scale's word) after BS.1534 post-screening, and ABX as total correct of total trials with the
exact binomial p and each listener's own p; the plain sentence for the room; the CSV rows.

Inputs are what the store (``core.listening.shared_test_store``) keeps, by id: ratings as dicts with
``listener``, ``item``, ``condition``, ``rating``; ABX answers with ``listener``, ``correct``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from core.listening import mushra_screening
from core.listening.mushra import HIDDEN_REFERENCE, scale_word
from core.listening.pooled_stats import MeanCi, binomial_tail, mean_ci, p_text

MIN_LISTENERS_TO_CONCLUDE = 3  # counted listeners below which the room's ratings are shown, not concluded
SCALE_LOW, SCALE_HIGH = 0.0, 100.0  # the MUSHRA scale: an interval is never shown past its ends


@dataclass(frozen=True)
class ConditionRow:
    condition: str  # source id
    ci: MeanCi
    word: str  # the scale's band for the mean ("bad" .. "excellent"; "" when no rating)

    def to_dict(self) -> dict:
        return {"condition": self.condition, "word": self.word} | self.ci.to_dict()


@dataclass(frozen=True)
class MushraPooled:
    listeners: int  # who rated at least one complete screen
    kept: int  # of those, left in the pool
    conditions: tuple[ConditionRow, ...]  # in the plan's order
    screened: tuple[mushra_screening.Screened, ...]
    include_excluded: bool
    rule: str = mushra_screening.RULE

    @property
    def counted(self) -> int:
        """Listeners whose ratings the means hold: the kept ones, or all with the excluded included."""
        return self.listeners if self.include_excluded else self.kept

    @property
    def too_few_to_conclude(self) -> bool:
        return 0 < self.listeners and self.counted < MIN_LISTENERS_TO_CONCLUDE

    def to_dict(self) -> dict:
        return {
            "listeners": self.listeners,
            "kept": self.kept,
            "too_few_to_conclude": self.too_few_to_conclude,
            "include_excluded": self.include_excluded,
            "rule": self.rule,
            "conditions": [c.to_dict() for c in self.conditions],
            "listener_rows": [s.to_dict() for s in self.screened],
        }


def pool_mushra(conditions, ratings: list[dict], include_excluded: bool = False) -> MushraPooled:
    """Per condition mean and interval over the kept listeners' complete screens."""
    by_listener: dict[str, dict[int, dict[str, int]]] = {}
    for r in ratings:
        by_listener.setdefault(r["listener"], {}).setdefault(int(r["item"]), {})[r["condition"]] = int(r["rating"])
    screened = tuple(
        mushra_screening.screen(listener, got, conditions) for listener, got in sorted(by_listener.items())
    )
    rated = [s for s in screened if s.items]
    pooled = [s for s in rated if include_excluded or not s.excluded]
    values: dict[str, list[int]] = {c: [] for c in conditions}
    for s in pooled:
        for got in mushra_screening.complete_screens(by_listener[s.listener], conditions).values():
            for c in conditions:
                values[c].append(got[c])
    rows = []
    for c in conditions:
        ci = mean_ci(values[c])
        rows.append(ConditionRow(c, ci, scale_word(ci.mean)))
    kept = sum(1 for s in rated if not s.excluded)
    return MushraPooled(len(rated), kept, tuple(rows), screened, include_excluded)


def mushra_sentence(pooled: MushraPooled, name_of: Callable[[str], str]) -> str:
    """ "7 listeners, 6 kept: the codec was rated 'good' (71 ± 8), Opus 6 kbit/s 'fair' (48 ± 10), the
    hidden reference 'excellent' (96 ± 3)": best first; ``name_of`` names a condition id."""
    if not pooled.listeners:
        return "No listener has finished a screen yet."
    parts = [
        f"{name_of(r.condition)} '{r.word}' ({plus_minus(r.ci)})"
        for r in sorted(pooled.conditions, key=lambda r: -r.ci.mean if math.isfinite(r.ci.mean) else math.inf)
        if r.ci.n
    ]
    head = f"{pooled.listeners} listener{'s' if pooled.listeners != 1 else ''}, {pooled.kept} kept"
    if pooled.include_excluded and pooled.kept < pooled.listeners:
        head += " (the excluded included)"
    few = (
        f"; too few listeners to conclude (at least {MIN_LISTENERS_TO_CONCLUDE})" if pooled.too_few_to_conclude else ""
    )
    return f"{head}: rated " + ", ".join(parts) + few


def plus_minus(ci: MeanCi) -> str:
    """ "71 ± 8" (the mean and the interval's half width; one listener: "71 ± ?"); an interval that
    reaches past the scale is given as its part on the scale: "22 (0–100)", never "22 ± 95"."""
    if not math.isfinite(ci.mean):
        return "–"
    if not math.isfinite(ci.half_width):
        return f"{ci.mean:.0f} ± ?"
    low, high = ci.mean - ci.half_width, ci.mean + ci.half_width
    if low < SCALE_LOW or high > SCALE_HIGH:
        return f"{ci.mean:.0f} ({max(low, SCALE_LOW):.0f}–{min(high, SCALE_HIGH):.0f})"
    return f"{ci.mean:.0f} ± {ci.half_width:.0f}"


@dataclass(frozen=True)
class ListenerAbx:
    listener: str
    correct: int
    trials: int
    p_value: float


@dataclass(frozen=True)
class AbxPooled:
    listeners: tuple[ListenerAbx, ...]
    correct: int
    trials: int
    p_value: float  # exact one-sided binomial over every trial of every listener

    def to_dict(self) -> dict:
        return {
            "correct": self.correct,
            "trials": self.trials,
            "p_value": self.p_value,
            "listener_rows": [vars(listener) for listener in self.listeners],
        }


def pool_abx(answers: list[dict]) -> AbxPooled:
    """Total correct of total trials, its exact binomial p, and each listener's own."""
    by: dict[str, list[int]] = {}
    for a in answers:
        by.setdefault(a["listener"], []).append(int(a["correct"]))
    rows = tuple(
        ListenerAbx(who, sum(got), len(got), binomial_tail(sum(got), len(got))) for who, got in sorted(by.items())
    )
    correct, trials = sum(r.correct for r in rows), sum(r.trials for r in rows)
    return AbxPooled(rows, correct, trials, binomial_tail(correct, trials))


def abx_sentence(pooled: AbxPooled) -> str:
    """ "4 listeners, 31 of 40 correct: the room can tell them apart, p = 0.0003"."""
    if not pooled.trials:
        return "No answers yet."
    p = pooled.p_value
    words = (
        "the room can tell them apart"
        if p < 0.05
        else "the room can probably tell them apart"
        if p < 0.10
        else "the room could not reliably tell them apart"
    )
    n = len(pooled.listeners)
    return f"{n} listener{'s' if n != 1 else ''}, {pooled.correct} of {pooled.trials} correct: {words}, {p_text(p)}"


def hidden_reference_first(conditions) -> list[str]:
    """The conditions with the hidden reference first (for tables and charts)."""
    return [HIDDEN_REFERENCE, *[c for c in conditions if c != HIDDEN_REFERENCE]]
