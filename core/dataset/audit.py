"""The fine-tuning audit (``tokenize ... --audit N``): round-trip a stratified sample of N clips of the
input and say, in the dataset card, what a fine-tuner should know before training on the codes.

The sample: with a speaker column in the rows (``speaker``, ``speaker_id``, ``spk``), the speakers in
turn (the first row of each, then the second, ...) so every speaker is heard; else rows evenly spread
over the input. Each sampled clip is read as tokenize reads it (core.dataset.decode, the same limits),
round-tripped by the same checkpoint in this process, and measured: GE2E speaker similarity of the
reconstruction (core.analysis.speaker), the original's sample rate (resampled to 24 kHz or not),
clipped samples, leading and trailing silence, its duration and its codes. Nothing here changes what
is tokenized: it reads the input again, after the job, and writes ``audit.json`` and a card section.
Its cost is the N round trips (and one model load).
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from core.codec import FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE
from core.dataset.rows import Inputs, Item

logger = logging.getLogger(__name__)

SPEAKER_FIELDS = ("speaker", "speaker_id", "spk")  # row fields that name the speaker
SILENCE_DBFS = -50.0  # a 10 ms frame quieter than this counts as silence at the ends
FRAME_S = 0.01
DURATION_BINS_S = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, math.inf)  # the histogram's edges
AUDIT_FILE = "audit.json"


def speaker_of(item: Item) -> str | None:
    try:
        extra = json.loads(item.extra or "{}")
    except ValueError:
        return None
    for name in SPEAKER_FIELDS:
        if isinstance(extra, dict) and extra.get(name) not in (None, ""):
            return str(extra[name])
    return None


def sample(items: tuple[Item, ...], n: int) -> list[Item]:
    """``n`` items: speakers in turn when the rows name them, else evenly spread; in input order."""
    if n <= 0 or not items:
        return []
    by_speaker: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        speaker = speaker_of(item)
        if speaker is not None:
            by_speaker[speaker].append(item)
    if by_speaker:
        chosen: list[Item] = []
        queues = [list(v) for _, v in sorted(by_speaker.items())]
        while len(chosen) < n and any(queues):
            for queue in queues:
                if queue and len(chosen) < n:
                    chosen.append(queue.pop(0))
        return sorted(chosen, key=lambda i: i.index)
    picks = sorted({int(round(c)) for c in np.linspace(0, len(items) - 1, min(n, len(items)))})
    return [items[i] for i in picks]


def _edge_silence_s(x: np.ndarray) -> tuple[float, float]:
    """Seconds of silence (10 ms frames under SILENCE_DBFS) at the start and at the end."""
    frame = int(FRAME_S * SAMPLE_RATE)
    count = x.size // frame
    if count == 0:
        return 0.0, 0.0
    rms = np.sqrt(np.mean(np.square(x[: count * frame].reshape(count, frame), dtype=np.float64), axis=1))
    loud = np.flatnonzero(20 * np.log10(np.maximum(rms, 1e-12)) >= SILENCE_DBFS)
    if loud.size == 0:
        return count * FRAME_S, count * FRAME_S
    return loud[0] * FRAME_S, (count - 1 - loud[-1]) * FRAME_S


def audit(inputs: Inputs, engine, n: int) -> dict:
    """Round-trip and measure ``n`` sampled clips of ``inputs`` with ``engine`` (ready)."""
    from core.analysis import speaker
    from core.analysis.speaker_models import GE2E, encoder
    from core.dataset.decode import decode_items

    chosen = sample(inputs.items, n)
    limits = engine.settings.audio_limits()
    ge2e = encoder(GE2E)
    clips = []
    for item, (audio, _sha, reason) in zip(
        chosen, decode_items([i.path for i in chosen], [i.locator for i in chosen], limits), strict=True
    ):
        row: dict = {"index": item.index, "audio": item.key, "speaker": speaker_of(item)}
        if audio is None:
            clips.append(row | {"error": reason})
            continue
        facts = audio.facts
        lead, trail = _edge_silence_s(audio.samples)
        row |= {
            "duration_s": facts.duration_s,
            "sample_rate": facts.sample_rate,
            "resampled": facts.sample_rate != SAMPLE_RATE,
            "clipped_samples": facts.clipped_samples,
            "leading_silence_s": lead,
            "trailing_silence_s": trail,
            "frames": math.ceil(audio.samples.size / (SAMPLE_RATE / FRAME_RATE)),
        }
        try:
            reconstruction = engine.roundtrip(audio).decoded.samples
            row["sim_ge2e"], row["sim_note"] = speaker.pair(audio.samples, reconstruction, SAMPLE_RATE, ge2e)
        except Exception as e:  # noqa: BLE001 - one clip that fails is a row with its error
            row["error"] = f"{type(e).__name__}: {e}"
        clips.append(row)
    return summarise(clips, inputs, ge2e.label, engine.random_weights)


def summarise(clips: list[dict], inputs: Inputs, model: str, random_weights: bool) -> dict:
    """The audit's figures from its clips' rows."""
    done = [c for c in clips if "duration_s" in c]
    per_speaker: dict[str, list[float]] = defaultdict(list)
    for c in done:
        if isinstance(c.get("sim_ge2e"), float):
            per_speaker[c["speaker"] or "(no speaker column)"].append(c["sim_ge2e"])
    counts = [0] * (len(DURATION_BINS_S) - 1)
    for c in done:
        counts[next(i for i in range(len(counts)) if c["duration_s"] < DURATION_BINS_S[i + 1])] += 1
    frames = [c["frames"] for c in done]
    mean_frames = statistics.fmean(frames) if frames else 0.0
    return {
        "model": model,
        "random_weights": random_weights,
        "sampled": len(clips),
        "rows": len(inputs.items),
        "failed": [c for c in clips if "error" in c],
        "speakers": {
            s: {"clips": len(v), "mean": statistics.fmean(v), "worst": min(v)} for s, v in sorted(per_speaker.items())
        },
        "sample_rates": dict(sorted(_count(c["sample_rate"] for c in done).items())),
        "resampled": sum(c["resampled"] for c in done),
        "clipped_clips": sum(c["clipped_samples"] > 0 for c in done),
        "leading_silence_over_0_5_s": sum(c["leading_silence_s"] > 0.5 for c in done),
        "trailing_silence_over_0_5_s": sum(c["trailing_silence_s"] > 0.5 for c in done),
        "durations": {_bin_label(i): n for i, n in enumerate(counts)},
        "token_budget": {
            "mean_frames_per_clip": mean_frames,
            "estimated_frames": round(mean_frames * len(inputs.items)),
            "estimated_codes": round(mean_frames * len(inputs.items) * NUM_CODEBOOKS),
        },
        "clips": clips,
    }


def _count(values) -> dict:
    out: dict = defaultdict(int)
    for v in values:
        out[v] += 1
    return out


def _bin_label(i: int) -> str:
    low, high = DURATION_BINS_S[i], DURATION_BINS_S[i + 1]
    return f"{low:g} s and longer" if math.isinf(high) else f"{low:g}-{high:g} s"


def card_section(report: dict) -> str:
    """The dataset card's audit section (markdown)."""
    lines = [
        "",
        f"## Fine-tuning audit ({report['sampled']} of {report['rows']} clips round-tripped)",
        "",
        "A stratified sample (speakers in turn when the rows name them) read as tokenizing read it, round-tripped "
        "by the same checkpoint. It changed nothing that was tokenized.",
        "",
    ]
    if report["random_weights"]:
        lines += ["**The checkpoint has random weights: the similarities say nothing about the real codec.**", ""]
    lines += [f"Speaker similarity ({report['model']}, not WavLM; 1 = same) per speaker:", ""]
    lines += ["| speaker | clips | mean | worst |", "|---|---|---|---|"]
    lines += [f"| {s} | {v['clips']} | {v['mean']:.3f} | {v['worst']:.3f} |" for s, v in report["speakers"].items()]
    rates = ", ".join(f"{rate} Hz: {n}" for rate, n in report["sample_rates"].items())
    lines += [
        "",
        f"- Sample rates: {rates or 'none read'}; resampled to 24 kHz: {report['resampled']}",
        f"- Clips with clipped samples: {report['clipped_clips']}",
        f"- Over 0.5 s of silence at the start: {report['leading_silence_over_0_5_s']}; at the end: "
        f"{report['trailing_silence_over_0_5_s']}",
        "- Durations: " + ", ".join(f"{k}: {n}" for k, n in report["durations"].items()),
        f"- Token budget (from the sample): {report['token_budget']['mean_frames_per_clip']:.1f} frames per clip, "
        f"about {report['token_budget']['estimated_frames']} frames ({report['token_budget']['estimated_codes']} codes) "
        "for every row",
    ]
    if report["failed"]:
        lines.append(f"- Not audited: {len(report['failed'])} clip(s); {AUDIT_FILE} says why")
    return "\n".join(lines) + "\n"


def run_audit(source, out: Path, settings, n: int, audio_column: str) -> dict:
    """The CLI's ``--audit N`` after a tokenize job: its own engine on the same checkpoint, ``audit.json``
    and the card section appended to the card (README.md)."""
    from core.dataset.card import CARD_FILE
    from core.dataset.inputs import read_inputs
    from core.model.engine import Engine

    engine = Engine(settings)
    if not engine.load():
        from core.errors import CodecError

        raise CodecError(f"The audit could not load {settings.model}: {engine.error}")
    report = audit(read_inputs(source, audio_column), engine, n)
    (Path(out) / AUDIT_FILE).write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    with open(Path(out) / CARD_FILE, "a", encoding="utf-8") as card:
        card.write(card_section(report))
    return report
