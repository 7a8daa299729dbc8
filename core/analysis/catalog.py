"""The metrics the workbench measures: one table, one row per metric.

Each row says what the metric is called wherever it is stored or sent (its ``id``: the metrics
table, CSV columns, JSON; never translated), where its words live in the locales, what it means,
which way is better, its unit, what computes it and on which part of the clip, where it is shown,
and, when it votes in the verdict, its bounds. Every list of metrics in ``core`` and ``webui`` (the
metrics table, the source table, the evaluation CSV and report, the placing sentence, the verdict
and its card, the Evaluate tab) is read from here. Nothing here imports numpy, pesq or pystoi.

How to add a metric: docs/judging.md ("Adding a metric").

Verdict bounds (docs/judging.md has the reasoning). The tokenizer's published figures on LibriSpeech
test-clean are PESQ-WB 3.21, PESQ-NB 3.68, STOI 0.96, UTMOS 4.16: the codec at its best. "Close to
the original" asks for a clip within about 0.2 PESQ / 0.03 STOI of those means and a MOS drop a
listener would not notice; "badly degraded" starts where speech is still intelligible but clearly
damaged (the MOS drop of added noise or a 2 kHz low-pass in DistillMOS's own measurements).
"""

from __future__ import annotations

from dataclasses import dataclass

METRIC_WINDOW_S = 8.0  # s of audio PESQ, STOI and DistillMOS look at (speed: ~15 ms per second of audio)

PAIR, SINGLE, DROP = "pair", "single", "drop"  # MetricRow.reads
FIRST, WHOLE, MOS_WINDOWS = "first", "whole", "mos windows"  # MetricRow.window
SPREAD = "spread windows"  # MetricRow.window: core.analysis.speaker's windows (4 x 8 s spread over the clip)
HIGHER, LOWER = "higher", "lower"  # MetricRow.better

# (green at or above / red below) per signal; the MOS drop is green at or below / red above.
PESQ_WB_GREEN = 3.0  # published mean 3.21, less the ~0.2 clip-to-clip spread
PESQ_WB_RED = 2.0  # below this PESQ calls speech "annoying" (P.862 MOS-LQO scale)
STOI_GREEN = 0.93  # published mean 0.96, less 0.03
STOI_RED = 0.85  # below this intelligibility itself starts to suffer
MOS_DROP_GREEN = 0.5  # MOS points; published UTMOS 4.16 is about that of clean LibriSpeech
MOS_DROP_RED = 1.2  # about half the drop of noise / a 2 kHz low-pass (clean 3.8-4.3 -> 1.8-2.7)
# GE2E speaker similarity, measured on espeak-ng voices and a recorded voice (docs/judging.md,
# bench/results/voice_bench.md): same voice re-synthesised 0.979-0.987, two espeak voices 0.61-0.92.
SIM_GE2E_GREEN = 0.95  # above every pair of different voices measured, below every re-synthesis
SIM_GE2E_RED = 0.75  # below every anchor on every voice (lowest: 0.78); a man vs a woman gave 0.61-0.68


@dataclass(frozen=True)
class MetricRow:
    id: str  # "PESQ-WB": its name in tables, CSV columns and JSON (stored and sent; never translated)
    key: str  # "pesq": the stem of its own locale keys (metrics.signal.<key>, metrics.reason.<key>.<light>)
    meaning: str  # one line of English saying what it measures and its range (the page: metrics.meaning.<id>)
    better: str  # HIGHER or LOWER
    unit: str  # "dB", "" (dimensionless)
    compute: str  # what computes it: a bare name is a function of core.analysis.signal_metrics, else a dotted path
    reads: (
        str  # PAIR: the clip against the original; SINGLE: the clip alone; DROP: the original's score less the clip's
    )
    window: str  # FIRST: the first METRIC_WINDOW_S seconds; WHOLE: the whole clip; MOS_WINDOWS: DistillMOS's windows
    rate: int | None = None  # Hz the computation gets the audio at (None: the clip's own, the comparison rate)
    hears_hz: int | None = None  # Hz the measure itself works at when it resamples again inside (pystoi: 10 kHz)
    green: float | None = None  # verdict bound: green at or better than this (None: it does not vote)
    red: float | None = None  # verdict bound: red worse than this
    card_rank: int = 0  # its place on the verdict card's numbers (1 first: what a listener cares about first)
    source_table: bool = False  # a row of the table of every source (core.judging.source_table)
    places: bool = False  # the placing sentence rests on it (core.judging.placing)
    plotted: bool = False  # its distribution is drawn in the evaluation report
    quick: bool = False  # among the fast metrics (``quick_compare``: many versions of one clip)
    said_alone: bool = False  # the verdict card says its reason on a line of its own, always (same voice?)
    judge: str = ""  # the judging model that computes it, "speaker:ge2e", "asr:whisper" (core.analysis.judges)

    @property
    def votes(self) -> bool:
        """It gives the verdict a light."""
        return self.green is not None and self.red is not None

    def measured_at(self, comparison_hz: int) -> int:
        """The rate this metric really measures at when the clip is compared at ``comparison_hz``: PESQ at
        16 kHz, STOI at 10 kHz, SI-SDR and the log-mel distance at the comparison rate (48 kHz for a 48 kHz
        decoder: the only rows that see its band above 12 kHz), speaker models and ASR at theirs."""
        return self.hears_hz or self.rate or int(comparison_hz)

    @property
    def higher_is_better(self) -> bool:
        return self.better == HIGHER

    def function(self):
        """What ``compute`` names, imported on first use. A metric that reads PAIR is called as
        ``function(row, clip)`` by ``core.analysis.metrics.compare`` (``clip.signals(row)`` gives both
        signals at the row's rate and window), so it may live in a module of its own."""
        import importlib

        parts = self.compute.split(".") if "." in self.compute else [*COMPUTE_HOME.split("."), self.compute]
        for depth in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
            try:
                found = importlib.import_module(".".join(parts[:depth]))
            except ModuleNotFoundError:
                continue
            for name in parts[depth:]:
                found = getattr(found, name)
            return found
        raise ImportError(f"metric {self.id!r}: no module in {self.compute!r}")

    def locale_keys(self) -> tuple[str, ...]:
        """The keys every language must have for this metric."""
        keys: tuple[str, ...] = (f"metrics.meaning.{self.id}",) if self.reads == PAIR else ()
        if self.votes:
            keys += (f"metrics.signal.{self.key}", *(f"metrics.reason.{self.key}.{light}" for light in LIGHTS))
        return keys


LIGHTS = ("green", "amber", "red")  # best to worst
COMPUTE_HOME = "core.analysis.signal_metrics"  # the module of a bare MetricRow.compute name

METRICS: tuple[MetricRow, ...] = (  # in the order the metrics table, the CSV and the reports show them
    MetricRow(
        "PESQ-WB",
        "pesq",
        "perceived quality, wideband (ITU-T P.862.2): 1.0 bad .. 4.64 transparent",
        HIGHER,
        "",
        "pesq_wb",
        PAIR,
        FIRST,
        rate=16_000,
        green=PESQ_WB_GREEN,
        red=PESQ_WB_RED,
        card_rank=2,
        source_table=True,
        places=True,
        plotted=True,
    ),
    MetricRow(
        "PESQ-NB",
        "pesq_nb",
        "perceived quality, telephone band (ITU-T P.862): 1.0 bad .. 4.5 transparent",
        HIGHER,
        "",
        "pesq_nb",
        PAIR,
        FIRST,
        rate=16_000,  # narrowband PESQ on the same 16 kHz audio as wideband
    ),
    MetricRow(
        "STOI",
        "stoi",
        "short-time objective intelligibility: 0 .. 1 (identical)",
        HIGHER,
        "",
        "stoi",
        PAIR,
        FIRST,
        rate=16_000,  # pystoi resamples to 10 kHz itself
        hears_hz=10_000,
        green=STOI_GREEN,
        red=STOI_RED,
        card_rank=1,
        source_table=True,
        places=True,
        plotted=True,
    ),
    MetricRow(
        "SI-SDR",
        "si_sdr",
        "scale-invariant signal-to-distortion ratio: waveform fidelity",
        HIGHER,
        "dB",
        "si_sdr",
        PAIR,
        WHOLE,
        source_table=True,
        plotted=True,  # left out of the placing: it scores waveform match, which a neural codec does not aim for
        quick=True,
    ),
    MetricRow(
        "Log-mel distance",
        "mel",
        "mean absolute difference of the log-mel spectrograms",
        LOWER,
        "dB",
        "mel_distance",
        PAIR,
        WHOLE,
        source_table=True,
        places=True,
        quick=True,
    ),
    MetricRow(
        "DistillMOS",
        "distillmos",
        "predicted listener score (DistillMOS) of the clip alone: 1 bad .. 5 excellent",
        HIGHER,
        "",
        "core.judging.verdict.MosPredictor.predict",
        SINGLE,
        FIRST,
        rate=16_000,
        source_table=True,
        places=True,
    ),
    MetricRow(
        "MOS drop",
        "mos",
        "DistillMOS of the original less that of the reconstruction, in MOS points",
        LOWER,
        "",
        "core.judging.verdict.judge",
        DROP,
        MOS_WINDOWS,
        rate=16_000,
        green=MOS_DROP_GREEN,
        red=MOS_DROP_RED,
        card_rank=3,
    ),
    MetricRow(
        "SIM-GE2E",
        "sim_ge2e",
        "speaker similarity (GE2E, resemblyzer; not the paper's WavLM SIM): cosine of voice embeddings, 1 same",
        HIGHER,
        "",
        "core.analysis.speaker.ge2e_metric",
        PAIR,
        SPREAD,
        rate=16_000,
        green=SIM_GE2E_GREEN,
        red=SIM_GE2E_RED,
        card_rank=4,
        source_table=True,
        said_alone=True,  # "same voice?" is what users of this codec ask first: never left out for three others
        judge="speaker:ge2e",
    ),
    MetricRow(  # the Qwen3-TTS table's kind of SIM; no verdict bounds (none could be measured without its weights)
        "SIM-WavLM",
        "sim_wavlm",
        "speaker similarity (WavLM x-vector, the paper's kind of model): cosine of speaker embeddings, 1 same",
        HIGHER,
        "",
        "core.analysis.speaker.wavlm_metric",
        PAIR,
        SPREAD,
        rate=16_000,
        card_rank=5,  # on the card's numbers without a light, where GE2E's row would be
        source_table=True,
        judge="speaker:wavlm",
    ),
    MetricRow(
        "dWER-Whisper",
        "dwer_whisper",
        "dWER (Whisper): share of words heard differently than in the original, 0 same words",
        LOWER,
        "",
        "core.analysis.dwer.dwer_metric",
        PAIR,
        SPREAD,
        rate=16_000,
        judge="asr:whisper",
    ),
    MetricRow(  # English only; measured not to separate a 3.5 kHz low-pass on synthetic speech (docs/judging.md)
        "dWER-pocketsphinx",
        "dwer_pocketsphinx",
        "dWER (pocketsphinx, US English): share of words heard differently than in the original, 0 same words",
        LOWER,
        "",
        "core.analysis.dwer.dwer_metric",
        PAIR,
        SPREAD,
        rate=16_000,
        judge="asr:pocketsphinx",
    ),
)
BY_ID = {m.id: m for m in METRICS}
COMPARED = tuple(m for m in METRICS if m.reads == PAIR)  # what ``core.analysis.metrics.compare`` returns, in order
VOTERS = tuple(m for m in METRICS if m.votes)  # the verdict's signals, in the table's order
CARD = tuple(sorted((m for m in METRICS if m.card_rank), key=lambda m: m.card_rank))  # the card's numbers, in order
VOTERS_ON_CARD = tuple(m for m in CARD if m.votes)  # the verdict's signals in the order the card shows them
# the id constants below come from the rows, found by locale key (never by display text)
_ID_OF_KEY = {m.key: m.id for m in METRICS}
PESQ_WB, STOI = _ID_OF_KEY["pesq"], _ID_OF_KEY["stoi"]  # the two a reader of the codec's paper quotes first
MOS, MOS_DROP = _ID_OF_KEY["distillmos"], _ID_OF_KEY["mos"]
PESQ_NB, SIM_GE2E, SIM_WAVLM = _ID_OF_KEY["pesq_nb"], _ID_OF_KEY["sim_ge2e"], _ID_OF_KEY["sim_wavlm"]
SI_SDR, MEL_DISTANCE = _ID_OF_KEY["si_sdr"], _ID_OF_KEY["mel"]
DWER_WHISPER, DWER_POCKETSPHINX = _ID_OF_KEY["dwer_whisper"], _ID_OF_KEY["dwer_pocketsphinx"]
DWER = tuple(m.id for m in METRICS if m.judge.startswith("asr:"))  # one row per ASR: never one column


def metric(metric_id: str) -> MetricRow:
    """The row of ``metric_id``; KeyError naming the known ids for anything else."""
    try:
        return BY_ID[metric_id]
    except KeyError:
        raise KeyError(f"unknown metric {metric_id!r}; known: {', '.join(BY_ID)}") from None


def ids(rows) -> tuple[str, ...]:
    """The ids of ``rows``."""
    return tuple(m.id for m in rows)
