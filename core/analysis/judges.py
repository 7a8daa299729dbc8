"""Which judging models the numbers come from: the speaker model behind speaker similarity and the
ASR behind dWER.

One frozen object, made at the edge from the settings (``--speaker-model``, ``--asr``,
``--asr-language``: :meth:`Judges.of`) and handed to ``core.analysis.metrics.compare``. A catalogue
row computed by one model names it (``MetricRow.judge``, e.g. ``speaker:wavlm``); ``compare`` runs
the rows of the models chosen here, so a WavLM number is always in the SIM-WavLM row and a GE2E
number in SIM-GE2E: two models' numbers never share a column. Nothing here loads a model
(core.analysis.speaker_models and core.analysis.asr do, on first use).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

GE2E = "ge2e"  # resemblyzer's GE2E, inside its wheel: the default speaker model
POCKETSPHINX = "pocketsphinx"  # CMU PocketSphinx's US-English model, inside its wheel
NO_ASR = ""  # no dWER (the default: pocketsphinx did not separate a 3.5 kHz low-pass on synthetic speech)
SPEAKER, ASR = "speaker", "asr"  # the kinds of MetricRow.judge ("speaker:ge2e", "asr:whisper", ...)
WAVLM, WHISPER = "wavlm", "whisper"  # what any other speaker model / ASR checkpoint is taken to be


@dataclass(frozen=True)
class Judges:
    speaker: str = GE2E  # "ge2e", or a WavLMForXVector checkpoint: a local directory or a hub id
    asr: str = NO_ASR  # "" (no dWER), "pocketsphinx" (English only), or a Whisper checkpoint: directory or hub id
    language: str = ""  # the clips' language for dWER ("en", "zh", ...; "": not stated)
    device: str = "cpu"  # where the judging models run

    def __post_init__(self) -> None:
        for name in ("speaker", "asr", "language"):
            object.__setattr__(self, name, str(getattr(self, name) or "").strip())
        if not self.speaker or self.speaker.lower() == GE2E:
            object.__setattr__(self, "speaker", GE2E)
        if self.asr.lower() == POCKETSPHINX:
            object.__setattr__(self, "asr", POCKETSPHINX)

    @property
    def speaker_kind(self) -> str:
        return GE2E if self.speaker == GE2E else WAVLM

    @property
    def asr_kind(self) -> str:
        if not self.asr:
            return NO_ASR
        return POCKETSPHINX if self.asr == POCKETSPHINX else WHISPER

    def computes(self, row) -> bool:
        """Whether the catalogue row ``row`` is one of these judges' (a row of no model always is)."""
        if not row.judge:
            return True
        kind, _, model = row.judge.partition(":")
        return (self.speaker_kind if kind == SPEAKER else self.asr_kind) == model

    def rows(self, rows: Iterable) -> tuple:
        """Those of ``rows`` these judges compute, in order."""
        return tuple(row for row in rows if self.computes(row))

    @classmethod
    def of(cls, settings) -> Judges:
        """The judges a ``core.settings.Settings`` names (its speaker_model, asr, asr_language, device)."""
        return cls(settings.speaker_model, settings.asr, settings.asr_language, settings.device)


DEFAULT_JUDGES = Judges()
