"""dWER: are the same words heard in another version of a clip as in the original?

An ASR transcribes the original and each other version on the same windows (the speaker
similarity's, core.analysis.speaker: at most ``max_windows`` x 8 s at any length); the dWER is the
word error rate of a version's transcript against the original's (substitutions + deletions +
insertions over the original transcript's words), so no reference text is needed. 0 is the same
words; it can pass 1 when words are inserted.

The ASR is named with every number (``DwerScore.model``). An ASR answers only for the languages it
knows: for any other (or a clip whose language is not stated, for an ASR that cannot tell) the
value is None and the note says "not measured for this language", never a number from the wrong
model. Which ASRs there are, and whether the packaged English one is good enough to show, is in
core.analysis.asr and docs/judging.md.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from core.analysis.speaker import MAX_WINDOWS, SIM_RATE, WINDOW_S, cut_windows, window_spans

logger = logging.getLogger(__name__)

MIN_WORDS = 3  # an original transcript with fewer words gives no dWER (one word off would be 33 %)
NOT_MEASURED = "not measured for this language"


class Asr(Protocol):
    """A speech recogniser: ``label`` names it wherever its numbers appear."""

    id: str  # "pocketsphinx" or "whisper"
    label: str  # e.g. "pocketsphinx 5.1.1 (en-us)"
    languages: frozenset[str] | None  # the languages it transcribes (None: any, it detects them)

    def transcribe(self, speech: np.ndarray, language: str | None) -> str:
        """The words heard in ``speech`` (float32 mono at SIM_RATE)."""
        ...


@dataclass(frozen=True)
class DwerScore:
    model: str  # the ASR's label
    language: str | None  # the clip's language as given ("en", "zh", ...; None: not stated)
    values: dict[str, float | None]  # source id -> dWER against the original's transcript (None: not available)
    transcripts: dict[str, str]  # "original" and each source id -> what the ASR heard
    windows: tuple[tuple[float, float], ...]  # (start s, end s) transcribed, in the clip
    note: str = ""  # why values are None, or which part was used
    seconds: float = 0.0
    notes: dict[str, str] = field(default_factory=dict)  # source id -> why that one is None

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "language": self.language,
            "values": dict(self.values),
            "transcripts": dict(self.transcripts),
            "windows": [list(w) for w in self.windows],
            "note": self.note,
            "notes": dict(self.notes),
            "seconds": self.seconds,
        }


def words(text: str) -> list[str]:
    """``text`` as words for counting errors: lower case, punctuation dropped (apostrophes kept),
    Unicode-normalised; a text without spaces between words (Chinese, Japanese) by character."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s']", " ", text)
    tokens: list[str] = []
    for token in text.split():
        if any(_unspaced(c) for c in token):
            tokens.extend(c for c in token if c.strip())
        else:
            tokens.append(token.strip("'"))
    return [t for t in tokens if t]


def _unspaced(c: str) -> bool:
    """CJK ideographs, kana and Thai are written without spaces: one character counts as one word."""
    o = ord(c)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0x0E00 <= o <= 0x0E7F


def edit_distance(reference: list[str], hypothesis: list[str]) -> int:
    """Substitutions + deletions + insertions turning ``reference`` into ``hypothesis`` (Levenshtein,
    O(len(reference) x len(hypothesis)) time, O(len(hypothesis)) memory)."""
    row = list(range(len(hypothesis) + 1))
    for i, word in enumerate(reference, 1):
        diagonal, row[0] = row[0], i
        for j, other in enumerate(hypothesis, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (word != other))
    return row[-1]


def error_rate(reference: str, hypothesis: str) -> float:
    """The word error rate of ``hypothesis`` against ``reference`` (both plain text)."""
    ref, hyp = words(reference), words(hypothesis)
    return edit_distance(ref, hyp) / max(len(ref), 1)


def handles(asr: Asr, language: str | None) -> bool:
    """Whether ``asr`` may be trusted with a clip in ``language`` ("en", "en-US", "zh-CN", ...; None:
    not stated, which only an ASR that detects the language itself takes)."""
    if asr.languages is None:
        return True
    if language is None:
        return bool(getattr(asr, "detects_language", False))
    return language.split("-")[0].lower() in asr.languages


def dwer(
    original,
    others: Mapping[str, object],
    sample_rate: int,
    asr: Asr,
    language: str | None,
    max_windows: int = MAX_WINDOWS,
) -> DwerScore:
    """dWER of each of ``others`` (source id -> samples aligned with the original) against the
    original, all transcribed by ``asr`` on the same windows."""
    started = time.perf_counter()
    x = np.asarray(original, dtype=np.float32).reshape(-1)
    spans = window_spans(x.size, sample_rate, max_windows)
    windows = tuple((round(s / sample_rate, 2), round(min(e, x.size) / sample_rate, 2)) for s, e in spans)
    empty: dict[str, float | None] = dict.fromkeys(others)
    if not handles(asr, language):
        stated = f"the clip's language ({language})" if language else "the clip's language is not stated and it"
        note = f"{NOT_MEASURED}: {stated} is not one {asr.label} transcribes"
        return DwerScore(asr.label, language, empty, {}, windows, note, time.perf_counter() - started)
    scope = "" if len(spans) == 1 else f"on {len(spans)} windows of {WINDOW_S:g} s spread over the clip, for speed"

    def heard(samples) -> str:
        return _heard(samples, spans, sample_rate, asr, language)

    transcripts = {"original": heard(x)}
    reference = words(transcripts["original"])
    if len(reference) < MIN_WORDS:
        note = f"the ASR heard {len(reference)} word(s) in the original; dWER needs at least {MIN_WORDS}"
        return DwerScore(asr.label, language, empty, transcripts, windows, note, time.perf_counter() - started)
    values: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for source_id, samples in others.items():
        try:
            transcripts[source_id] = heard(samples)
            values[source_id] = edit_distance(reference, words(transcripts[source_id])) / len(reference)
        except Exception as e:  # noqa: BLE001 - one source the ASR fails on leaves the others
            logger.warning("dWER of %s left out: %s", source_id, e)
            values[source_id], notes[source_id] = None, f"not available: {type(e).__name__}: {e}"
    return DwerScore(asr.label, language, values, transcripts, windows, scope, time.perf_counter() - started, notes)


_ORIGINALS: OrderedDict[tuple, str] = OrderedDict()  # (ASR, language, rate, original's digest) -> its transcript
_ORIGINALS_KEPT = 8  # originals whose transcript is kept (a round trip compares one with every source)
_ORIGINALS_LOCK = threading.Lock()


def dwer_metric(row, clip):
    """A dWER row of the metric catalogue (dWER-Whisper, dWER-pocketsphinx): the ASR the caller chose
    (``clip.judges.asr``) on the speaker similarity's windows; the original's transcript is made once
    per clip and kept for its next source. "not measured for this language" where the ASR does not
    handle the clip's language (``clip.judges.language``)."""
    from core.analysis.asr import recogniser
    from core.analysis.metrics import metric

    asr = recogniser(clip.judges.asr, clip.judges.device).load()
    language = clip.judges.language or None
    x, y, rate = clip.ref, clip.deg, clip.sample_rate
    spans = window_spans(x.size, rate)
    if not handles(asr, language):
        return metric(row, None, f"{NOT_MEASURED} ({language or 'not stated'}): {asr.label}")
    digest = hashlib.blake2b(digest_size=16)
    for start, end in spans:
        digest.update(x[start:end].tobytes())
    key = (asr.label, language, rate, x.size, digest.hexdigest())
    with _ORIGINALS_LOCK:
        heard = _ORIGINALS.get(key)
    if heard is None:
        heard = _heard(x, spans, rate, asr, language)
        with _ORIGINALS_LOCK:
            _ORIGINALS[key] = heard
            while len(_ORIGINALS) > _ORIGINALS_KEPT:
                _ORIGINALS.popitem(last=False)
    reference = words(heard)
    if len(reference) < MIN_WORDS:
        return metric(row, None, f"{asr.label} heard {len(reference)} word(s) in the original; dWER needs {MIN_WORDS}")
    value = edit_distance(reference, words(_heard(y, spans, rate, asr, language))) / len(reference)
    scope = "" if len(spans) == 1 else f"; on {len(spans)} windows of {WINDOW_S:g} s spread over the clip, for speed"
    return metric(row, value, f"{asr.label}{scope}")


def _heard(samples: np.ndarray, spans, rate: int, asr: Asr, language: str | None) -> str:
    pieces = cut_windows(np.asarray(samples, dtype=np.float32).reshape(-1), spans, rate)
    return " ".join(asr.transcribe(p, language) for p in pieces if p.size >= SIM_RATE // 10).strip()
