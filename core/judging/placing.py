"""Where the codec stands among the other sources of this clip, in words.

"Closer to the original than Opus 6 kbit/s" is said only when every metric measured on this clip
for both (the metric catalogue's rows marked ``places``: PESQ-WB, STOI, log-mel distance, DistillMOS;
at least ``MIN_METRICS`` of them) agrees; "further from the original than ..." when every one says
the other way; otherwise the placing is mixed and names the metrics on each side. SI-SDR is left
out: it scores waveform match, which a neural codec does not aim for, so it would put any waveform
codec ahead. This is a separate field
beside the verdict (``core.judging.verdict``), not part of its light.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.analysis import catalog
from core.judging import source_table
from core.judging.sources import CODEC_ID

COMPARED = catalog.ids(m for m in catalog.METRICS if m.places)  # what a placing rests on
MIN_METRICS = 2  # fewer metrics measured on both: no placing against that source
CLOSER, FURTHER, MIXED = "closer", "further", "mixed"  # Placement.relation


@dataclass(frozen=True)
class Placement:
    source_id: str  # the other source, e.g. "opus6"
    label: str  # its English label
    relation: str  # CLOSER, FURTHER or MIXED: the codec against this source
    better: list[str]  # metrics on which the codec is closer to the original
    worse: list[str]  # metrics on which it is further

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Placing:
    placements: list[Placement]  # one per other source with enough metrics, in the table's order
    sentence: str  # English, for the CLI, reports and logs
    random_weights: bool  # the numbers come from a random-weight checkpoint: they say nothing about the codec

    def to_dict(self) -> dict:
        return {
            "placements": [p.to_dict() for p in self.placements],
            "sentence": self.sentence,
            "random_weights": self.random_weights,
        }


def place(table: source_table.SourceTable, subject: str = CODEC_ID, random_weights: bool = False) -> Placing:
    """The codec (``subject``) against every other source of ``table`` except the original."""
    mine = table.column(subject).values
    placements = []
    for column in table.columns:
        if column.source["id"] in (subject, "original"):
            continue
        better: list[str] = []
        worse: list[str] = []
        for metric in COMPARED:
            a, b = mine.get(metric), column.values.get(metric)
            if a is None or b is None or a == b:
                continue
            ahead = a > b if catalog.BY_ID[metric].higher_is_better else a < b
            (better if ahead else worse).append(metric)
        if len(better) + len(worse) < MIN_METRICS:
            continue
        relation = CLOSER if not worse else FURTHER if not better else MIXED
        placements.append(Placement(column.source["id"], column.source["label"], relation, better, worse))
    return Placing(placements, sentence(placements, random_weights), random_weights)


def sentence(placements: list[Placement], random_weights: bool = False) -> str:
    """One English sentence: "On this clip the codec is closer to the original than A and B, further
    from it than C, and mixed against D (better on PESQ-WB, worse on STOI)."."""
    if not placements:
        return "On this clip there is nothing to place the codec against (no other source was measured)."
    parts = []
    closer = [p.label for p in placements if p.relation == CLOSER]
    further = [p.label for p in placements if p.relation == FURTHER]
    if closer:
        parts.append("closer to the original than " + _join(closer))
    if further:
        parts.append(("further from it than " if closer else "further from the original than ") + _join(further))
    for p in placements:
        if p.relation == MIXED:
            parts.append(f"mixed against {p.label} (better on {', '.join(p.better)}; worse on {', '.join(p.worse)})")
    text = "On this clip the codec is " + _join(parts) + "."
    if random_weights:
        text += " The checkpoint has random weights: this says nothing about the real codec."
    return text


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
