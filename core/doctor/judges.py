"""The judging models' check: each model the settings choose loads and answers on this machine.

The speaker model behind speaker similarity (``--speaker-model``: resemblyzer's GE2E, weights inside
its wheel, or a WavLM x-vector checkpoint) and, when one is chosen, the ASR behind dWER (``--asr``:
pocketsphinx or a Whisper checkpoint). :func:`try_judging_models` loads each and makes it answer:
the speaker model embeds a second of a synthetic vowel twice (the two must agree: a model that
answers noise would not), the ASR transcribes it (any text, even none, is an answer; an exception
is not). :func:`check_judging_models` judges what it saw.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from core.analysis.judges import DEFAULT_JUDGES, Judges
from core.doctor.findings import FAIL, PASS, Finding, finding
from core.doctor.words import said

FIX = said("fix_judges")
FIX_CHOSEN = said("fix_judges_chosen")
ROLES = {"speaker model": "role_speaker", "ASR": "role_asr"}  # a role's words in core.doctor.words


@dataclass(frozen=True)
class Seen:
    role: str  # "speaker model" or "ASR"
    chosen: str  # what the settings name: "ge2e", a directory, "pocketsphinx", ...
    label: str | None  # the model's label once loaded
    value: float | None  # the speaker model: self-similarity of one clip; the ASR: None
    error: str | None  # why it did not load or answer
    seconds: float | None = None  # how long the load and the answer took


def _vowel(rate: int) -> np.ndarray:
    t = np.arange(rate * 2) / rate
    return 0.1 * np.sum([np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12)], axis=0).astype(np.float32)


def try_speaker_model(judges: Judges = DEFAULT_JUDGES) -> Seen:
    """Load the chosen speaker model and embed a synthetic vowel twice."""
    try:
        from core.analysis import speaker
        from core.analysis.speaker_models import encoder

        started = time.perf_counter()
        model = encoder(judges.speaker, judges.device).load()
        vowel = _vowel(speaker.SIM_RATE)
        value = speaker.cosine(model.embed(vowel), model.embed(vowel.copy()))
        return Seen("speaker model", judges.speaker, model.label, value, None, time.perf_counter() - started)
    except Exception as e:  # noqa: BLE001 - any failure to load or run is what this check reports
        return Seen("speaker model", judges.speaker, None, None, f"{type(e).__name__}: {e}")


def try_asr(judges: Judges) -> Seen | None:
    """Load the chosen ASR and transcribe a synthetic vowel (None when no ASR is chosen)."""
    if not judges.asr:
        return None
    try:
        from core.analysis.asr import ASR_RATE, recogniser

        started = time.perf_counter()
        asr = recogniser(judges.asr, judges.device).load()
        asr.transcribe(_vowel(ASR_RATE), judges.language or None)
        return Seen("ASR", judges.asr, asr.label, None, None, time.perf_counter() - started)
    except Exception as e:  # noqa: BLE001 - any failure to load or run is what this check reports
        return Seen("ASR", judges.asr, None, None, f"{type(e).__name__}: {e}")


def try_judging_models(judges: Judges = DEFAULT_JUDGES) -> list[Seen]:
    """What loading each chosen judging model showed."""
    return [s for s in (try_speaker_model(judges), try_asr(judges)) if s is not None]


def check_judging_models(seen: list[Seen]) -> Finding:
    """Pass when every chosen model loaded and answered (the speaker model: one clip embedded twice
    gave the same vector)."""
    name, title = "judging_models", "Judging models load (speaker similarity, dWER)"
    for s in seen:
        fix = FIX if s.chosen in ("ge2e", "pocketsphinx") else FIX_CHOSEN
        if s.error is not None or s.label is None:
            failed = said("judge_failed", role_code=ROLES[s.role], chosen=repr(s.chosen), error=s.error)
            return finding(name, title, FAIL, failed, fix)
        if s.role == "speaker model" and not (s.value is not None and s.value > 0.999):
            shown = {"shown_code": "judge_nothing"} if s.value is None else {"shown": f"{s.value:.4f}"}
            return finding(name, title, FAIL, said("judge_twice", label=s.label, **shown), fix)
    if not seen:
        return finding(name, title, FAIL, said("judge_none"), FIX)
    answered = tuple(
        said("judge_ok_twice", **_answer(s), value=s.value) if s.value is not None else said("judge_ok", **_answer(s))
        for s in seen
    )
    speaker = next((s.value for s in seen if s.value is not None), None)
    return finding(name, title, PASS, answered, facts={"similarity": speaker} if speaker is not None else None)


def _answer(s: Seen) -> dict:
    """The fields of an answered model's sentence: its role, label and time."""
    return {"role_code": ROLES[s.role], "label": s.label, "seconds": s.seconds or 0.0}
