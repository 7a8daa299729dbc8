"""The Qwen3-TTS README's tokenizer table on a folder of your own clips (``evaluate DIR --table``).

The README ("Speech Tokenizer Benchmarks") reports, per tokenizer, NQ (codebooks), codebook size,
FPS (frames per second), PESQ_WB, PESQ_NB, STOI, UTMOS and SIM on LibriSpeech test-clean. This
module fills the same layout for the clips of one folder: one row for the codec's reconstruction
and one per anchor (core.anchors), each the mean over the files, with dWER beside (the X-codec 2
table's extra column). Every column names the model behind it, because two of them cannot be
the paper's here: MOS is DistillMOS (not UTMOS) and SIM is GE2E (not the WavLM model the paper
used); dWER says "not measured" unless an ASR that fits is configured. The published rows are
printed in a table of their own, with their source, never in a column of ours.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from core.analysis import catalog
from core.analysis.judges import DEFAULT_JUDGES, GE2E, POCKETSPHINX, Judges
from core.codec import CODEBOOK_SIZE, FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE

PUBLISHED_SOURCE = (
    "Qwen3-TTS README, 'Speech Tokenizer Benchmarks' (LibriSpeech test-clean per the technical report; "
    "MOS is UTMOS, SIM a WavLM-based speaker model)"
)
PUBLISHED = (  # (model, NQ, codebook size, FPS, PESQ_WB, PESQ_NB, STOI, UTMOS, SIM): /work's NOTES.md copy
    ("Qwen3-TTS-Tokenizer-12Hz", NUM_CODEBOOKS, CODEBOOK_SIZE, FRAME_RATE, 3.21, 3.68, 0.96, 4.16, 0.95),
    ("Mimi", None, None, None, 2.88, 3.42, 0.94, 3.87, 0.87),
    ("FireRedTTS-2 tokenizer", None, None, None, 2.73, 3.28, 0.94, 3.88, 0.87),
    ("SpeechTokenizer", None, None, None, 2.60, 3.05, 0.92, 3.90, 0.85),
    ("X-codec", None, None, None, 2.68, 3.27, 0.86, 4.11, 0.84),
    ("X-codec 2", None, None, None, 2.43, 3.04, 0.92, 4.13, 0.82),
    ("XY-Tokenizer", None, None, None, 2.41, 3.00, 0.91, 3.98, 0.83),
)
PUBLISHED_HEADER = ("model", "NQ", "codebook size", "FPS", "PESQ_WB", "PESQ_NB", catalog.STOI, "UTMOS", "SIM (WavLM)")


@dataclass(frozen=True)
class Column:
    header: str  # the README's name
    metric: str | None  # the metric catalogue id it is the mean of (None: not measured here)
    model: str  # what computes it, printed under the header


COLUMNS = (  # the README's headers; the metric catalogue's ids (core.analysis.catalog)
    Column("PESQ_WB", catalog.PESQ_WB, "ITU-T P.862.2, 16 kHz"),
    Column("PESQ_NB", catalog.PESQ_NB, "ITU-T P.862, 16 kHz"),
    Column(catalog.STOI, catalog.STOI, "pystoi"),
    Column("MOS (DistillMOS)", catalog.MOS, "DistillMOS of the clip, not UTMOS"),
)
NO_DWER = Column("dWER", None, "not measured: no ASR chosen (--asr pocketsphinx or a Whisper checkpoint)")


def columns(judges: Judges = DEFAULT_JUDGES) -> tuple[Column, ...]:
    """The table's columns for the judging models ``judges`` names: one speaker column, headed by
    its model (GE2E or WavLM, never both in one), and a dWER column headed by its ASR."""
    if judges.speaker_kind == GE2E:
        speaker = Column("SIM (GE2E)", catalog.SIM_GE2E, "GE2E (resemblyzer), not WavLM")
    else:
        speaker = Column("SIM (WavLM)", catalog.SIM_WAVLM, f"WavLM x-vector ({judges.speaker})")
    if judges.asr_kind == POCKETSPHINX:
        words = Column(
            "dWER (pocketsphinx)", catalog.DWER_POCKETSPHINX, "pocketsphinx, US English (docs/judging.md: weak)"
        )
    elif judges.asr_kind:
        words = Column("dWER (Whisper)", catalog.DWER_WHISPER, f"Whisper ({judges.asr})")
    else:
        words = NO_DWER
    return (*COLUMNS, speaker, words)


NOT_SHOWN = "—"
OUTPUT_RATE = "output_rate_hz"  # the rate a source was made at (a 48 kHz decoder's 48000), its own column


def measure(original, sources, max_windows: int | None = None, judges: Judges = DEFAULT_JUDGES) -> dict[str, dict]:
    """{source id: {metric id: value}} for each of ``sources`` (core.judging.sources.Source, aligned
    with ``original``): the table's comparisons by the judging models ``judges`` names (on its
    device) and DistillMOS of the source alone."""
    from core.analysis.metrics import compare
    from core.judging.verdict import predictor

    asked = [
        c.metric for c in columns(judges) if c.metric in catalog.BY_ID and catalog.BY_ID[c.metric].reads == catalog.PAIR
    ]
    out: dict[str, dict] = {}
    for source in sources:  # all at the set's comparison rate (core.audio.rates)
        rate = source.rate_hz
        values: dict = {m.name: m.value for m in compare(original, source.samples, rate, metrics=asked, judges=judges)}
        values[catalog.MOS] = predictor(judges.device).predict(source.samples, rate, max_windows)
        values[OUTPUT_RATE] = source.made_at_hz
        out[source.id] = values
    return out


def rows(
    per_file: list[dict[str, dict]], labels: dict[str, tuple[str, float | None]], judges: Judges = DEFAULT_JUDGES
) -> list[list]:
    """The table's rows: per source id (in ``labels``' order: id -> (label, bitrate or None)) its NQ,
    codebook size, FPS and the mean of each column over the files that have it, and the file count."""
    out = []
    for source_id, (label, bitrate) in labels.items():
        measured = [f[source_id] for f in per_file if source_id in f]
        codec = source_id in ("reconstruction", "compare")
        head: list = [label, NUM_CODEBOOKS if codec else NOT_SHOWN, CODEBOOK_SIZE if codec else NOT_SHOWN]
        head.append(FRAME_RATE if codec else NOT_SHOWN)
        made_at = {v.get(OUTPUT_RATE, SAMPLE_RATE) for v in measured} or {SAMPLE_RATE}
        head.append(" / ".join(f"{r / 1000:g}" for r in sorted(made_at)))  # output kHz
        means = []
        for column in columns(judges):
            values = [v[column.metric] for v in measured if isinstance(v.get(column.metric), int | float)]
            means.append(statistics.fmean(values) if values else None)
        out.append([*head, *means, len(measured), None if bitrate is None else round(bitrate)])
    return out


def header(judges: Judges = DEFAULT_JUDGES) -> list[str]:
    return [
        "source",
        "NQ",
        "codebook size",
        "FPS",
        "output kHz",
        *(c.header for c in columns(judges)),
        "files",
        "bit/s",
    ]


def _cell(value) -> str:
    if value is None:
        return NOT_SHOWN
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def markdown(table_rows: list[list], random_weights: bool, files: int, judges: Judges = DEFAULT_JUDGES) -> str:
    """The folder's table, the models behind its columns, and the published rows beside it."""
    lines = [f"## This folder: {files} file(s), mean per source", ""]
    if random_weights:
        lines += ["**Random weights: these numbers say nothing about the real codec's quality.**", ""]
    lines += _md_table(header(judges), [[_cell(v) for v in row] for row in table_rows])
    lines += ["", "Models behind the columns:"]
    lines += [f"- {c.header}: {c.model}" for c in columns(judges)]
    lines += ["", f"## Published (reference, not measured here): {PUBLISHED_SOURCE}", ""]
    lines += _md_table(list(PUBLISHED_HEADER), [[_cell(v) for v in row] for row in PUBLISHED])
    return "\n".join(lines) + "\n"


def _md_table(head: list[str], body: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in body)]
