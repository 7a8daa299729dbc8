"""Blind ABX listening test: the trial plan, the score and its sentence (the SQLite store of
sessions and answers is :mod:`core.listening.abx_store`).

A is the original (or the codec's full-rate output) and B what it is compared with: the codec's
output at full rate or a ladder level, a reference codec (core.anchors) or the second checkpoint;
both are stored with every trial by their source ids (``core.judging.sources``: "original",
"reconstruction", "k4", "opus6", "compare"), never by their display text. X is one of the two, chosen at random per trial.
The listener says which one X is. Under the null hypothesis "I cannot hear a difference" every
answer is a coin flip, so the evidence is the one-sided binomial tail P(K >= correct | n, 1/2).
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import asdict, dataclass

from core import anchors
from core.codec import NUM_CODEBOOKS
from core.errors import CodecError
from core.judging import sources
from core.listening.pooled_stats import p_text

logger = logging.getLogger(__name__)

DEFAULT_TRIALS = 10  # trials per test, as in the issue
MAX_TRIALS = 100  # more trials tire listeners without adding much
CHOICES = ("A", "B")  # A: original, B: codec output
SURE_P = 0.05  # p below this: "you can tell them apart"
PROBABLY_P = 0.10  # p below this: "you can probably tell them apart"
LEVEL_CHOICES = (NUM_CODEBOOKS, 8, 4, 2, 1)  # codebooks offered for B on the page (the API takes any 1..16)
A_ORIGINAL = sources.original().id  # A's source id unless A is the codec
A_CODEC = sources.CODEC_ID  # A's source id when A is the codec at full rate


class AbxError(CodecError):
    """A blind-test request that cannot be served; the message says what to do."""


@dataclass(frozen=True)
class Score:
    correct: int  # trials answered right
    trials: int  # trials answered
    planned: int  # trials in the test
    p_value: float  # one-sided binomial P(K >= correct | trials, 1/2)
    verdict: str  # "can", "probably" or "cannot" tell them apart
    sentence: str  # e.g. "8 of 10: you can probably tell them apart, p = 0.055 (A: original; B: Opus 6 kbit/s)"
    a_source: str = A_ORIGINAL  # what A is: a source id
    b_source: str = ""  # what B is: a source id; "" when not known

    def to_dict(self) -> dict:
        return asdict(self)


def plan_trials(n: int, seed: int) -> str:
    """Which of A/B is X in each of ``n`` trials: random, the same for the same seed."""
    if not 1 <= n <= MAX_TRIALS:
        raise AbxError(f"A blind test has 1 to {MAX_TRIALS} trials; {n} were asked for.")
    rng = random.Random(seed)
    return "".join(rng.choice(CHOICES) for _ in range(n))


def binomial_p(correct: int, n: int) -> float:
    """One-sided P(K >= correct) for K ~ Binomial(n, 1/2), exact."""
    if not 0 <= correct <= n:
        raise ValueError(f"correct must be in 0..{n}, got {correct}")
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(correct, n + 1)) / 2**n


def level_id(codebooks: int) -> str:
    """B's source id for the codec with its first ``codebooks`` codebooks (all of them: the reconstruction)."""
    return A_CODEC if codebooks == NUM_CODEBOOKS else sources.level(codebooks).id


def source_kind(source_id: str) -> str:
    """The kind of a stored source id (the source catalogue's, ``core.judging.sources.entry``); ""
    for an id no source has (a marked answer from before ids)."""
    kind = sources.entry(source_id).kind if source_id else ""
    return "" if kind == sources.ANCHOR and source_id not in anchors.BY_ID else kind


def english_name(source_id: str, detail: str = "") -> str:
    """A stored source id in English, for the CSV's readers and the CLI (the page words it by id in
    the reader's language); an id no source has, as it is."""
    kind = source_kind(source_id)
    if kind == sources.ORIGINAL:
        return sources.original().label
    if kind == sources.CODEC:
        return sources.codec().label
    if kind == sources.CHECKPOINT:
        return sources.checkpoint().label + (f" ({detail})" if detail else "")
    if kind == sources.ANCHOR:
        return anchors.BY_ID[source_id].label
    if kind == sources.LEVEL:
        return sources.level(int(source_id[1:])).label
    return source_id or "unknown"


def score(
    correct: int,
    trials: int,
    planned: int | None = None,
    b_source: str | None = None,
    a_source: str = A_ORIGINAL,
    b_detail: str = "",
) -> Score:
    """The score, its p-value and the sentence for a room of non-experts (naming A and B when B's
    source id ``b_source`` is given)."""
    p = binomial_p(correct, trials)
    if trials == 0:
        verdict, words = "cannot", "no answers yet"
    elif p < SURE_P:
        verdict, words = "can", "you can tell them apart"
    elif p < PROBABLY_P:
        verdict, words = "probably", "you can probably tell them apart"
    else:
        verdict, words = "cannot", "you could not reliably tell them apart (no better than guessing)"
    named = f" (A: {english_name(a_source)}; B: {english_name(b_source, b_detail)})" if b_source else ""
    sentence = f"{correct} of {trials}: {words}, {p_text(p)}" + named
    return Score(correct, trials, planned or trials, p, verdict, sentence, a_source, b_source or "")
