"""Per-source columns and summary of a folder evaluation (``core.judging.evaluate``).

With anchors (``--anchors``) or a second checkpoint (``--compare-model``), every file's row gets, per
source (the codec included, so that all are measured the same way), the metrics of
``core.judging.source_table`` as ``"<source id>: <metric>"`` columns, and for each other source where
the codec stands against it on that file (``"<source id>: codec is"``: closer, further or mixed;
``core.judging.placing``). The summary has one row per source: the mean of each metric over the
files, and on how many files the codec was closer, further or mixed.
"""

from __future__ import annotations

from core.analysis.judges import DEFAULT_JUDGES, Judges
from core.judging import averages, placing, source_table
from core.judging.sources import CODEC_ID, SourceSet

METRICS = source_table.ROWS  # PESQ-WB, STOI, SI-SDR, Log-mel distance, DistillMOS, Bitrate
PLACING = "codec is"  # the column of the codec's placing against a source


def source_ids(anchors, with_second: bool) -> list[str]:
    """The sources of every row, in the table's order: the codec, the second checkpoint, the anchors."""
    return [CODEC_ID, *(["compare"] if with_second else []), *(a.id for a in anchors)]


def columns(ids: list[str]) -> list[str]:
    """The CSV columns the sources add."""
    out = []
    for sid in ids:
        out += [f"{sid}: {m}" for m in METRICS]
        if sid != CODEC_ID:
            out.append(f"{sid}: {PLACING}")
    return out


def row_values(made: SourceSet, device: str, random_weights: bool, judges: Judges = DEFAULT_JUDGES) -> dict:
    """One file's per-source columns, measured on that file by the judging models ``judges`` names."""
    table = source_table.measure(made.original, made.sources, device, judges=judges)
    out: dict = {}
    for column in table.columns[1:]:
        sid = column.source["id"]
        out.update({f"{sid}: {m}": column.values.get(m) for m in METRICS})
    for p in placing.place(table, CODEC_ID, random_weights).placements:
        out[f"{p.source_id}: {PLACING}"] = p.relation
    return out


def summary(rows: list[dict], ids: list[str]) -> tuple[list[str], list[list]]:
    """(header, one row per source): files measured, the mean of each metric, and the codec's placing counts."""
    header = [
        "source",
        "files",
        *(f"mean {m}" for m in METRICS),
        "not available",
        "codec closer",
        "codec further",
        "mixed",
    ]
    out = []
    for sid in ids:
        measured = [r for r in rows if f"{sid}: Log-mel distance" in r and not r.get("error")]
        columns = [averages.column(measured, f"{sid}: {m}") for m in METRICS]
        relations = [r.get(f"{sid}: {PLACING}") for r in measured]
        counts = [
            relations.count(x) if sid != CODEC_ID else None for x in (placing.CLOSER, placing.FURTHER, placing.MIXED)
        ]
        left_out = sum(c.left_out for c in columns)  # values not available, left out of the means
        out.append([sid, len(measured), *(c.mean for c in columns), left_out, *counts])
    return header, out
