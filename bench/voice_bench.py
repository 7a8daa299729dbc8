"""Speaker similarity (SIM-GE2E): the measurements its verdict bounds rest on, and its cost.

    python bench/voice_bench.py [--lengths 10,64,600] [--out bench/results]

1. Values on real speech made here (tests/core/analysis/voices.py): espeak-ng voices and the
   alsa-utils recording. A clip with itself, the same voice re-synthesised (slower), different
   sentences of one voice, pairs of different voices, and the anchors (core.anchors) of each clip.
2. Cost: for clips of each length (espeak sentences after one another), the time and peak memory of
   SIM-GE2E for the codec's stand-in and three anchors (the web page's default sources), each in a
   fresh process so the peak is that length's; and the verdict's combine after it.

Writes voice_bench.json and voice_bench.md under --out.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import in_fresh_process, load_text, peak_rss_mib, provenance, table, write_results  # noqa: E402

ANCHORS = ("lp3.5", "lp7", "amr", "opus6", "opus12", "mp3")
SOURCES = ("lp3.5", "amr", "opus6")  # the page's default anchors (core.anchors.DEFAULT_ANCHORS)


def values() -> dict:
    from core.analysis import speaker
    from core.analysis.speaker_models import GE2E, encoder
    from core.anchors import BY_ID
    from core.anchors.make import make_one
    from tests.core.analysis import voices

    ge2e = encoder(GE2E).load()
    rate = voices.RATE
    said = {v: [voices.espeak(s, v) for s in voices.SENTENCES] for v in voices.VOICES}
    embedded = {v: [speaker.embedding(c, rate, ge2e) for c in clips] for v, clips in said.items()}
    out: dict = {"model": ge2e.label, "voices": {}, "pairs": {}, "recorded": {}}
    for v, clips in said.items():
        slow = speaker.embedding(voices.espeak(voices.SENTENCES[0], v, 120), rate, ge2e)
        anchors = {a: make_one(clips[0], BY_ID[a]).samples for a in ANCHORS}
        aligned = speaker.similarity(clips[0], {"itself": clips[0], **anchors}, rate, ge2e).values
        out["voices"][v] = {
            "resynthesised_120wpm": speaker.cosine(embedded[v][0], slow),
            "other_sentences": [speaker.cosine(embedded[v][0], e) for e in embedded[v][1:]],
            **aligned,
        }
    for a, b in itertools.combinations(voices.VOICES, 2):
        out["pairs"][f"{a} vs {b}"] = [speaker.cosine(x, y) for x, y in zip(embedded[a], embedded[b], strict=True)]
    recording = voices.recorded_sentence()
    anchors = {a: make_one(recording, BY_ID[a]).samples for a in ANCHORS}
    out["recorded"] = speaker.similarity(recording, {"itself": recording, **anchors}, rate, ge2e).values
    own = speaker.embedding(recording, rate, ge2e)
    out["recorded"]["vs espeak voices"] = [speaker.cosine(own, embedded[v][0]) for v in voices.VOICES]
    return out


def _cost(seconds: float, queue) -> None:
    """In a fresh process: SIM-GE2E of SOURCES against a clip of ``seconds``, then the verdict."""
    import numpy as np

    from core.analysis import catalog, speaker
    from core.analysis.speaker_models import GE2E, encoder
    from core.anchors import BY_ID
    from core.anchors.make import make_one
    from core.judging import verdict
    from tests.core.analysis import voices

    ge2e = encoder(GE2E).load()
    sentence = np.concatenate([voices.espeak(s) for s in voices.SENTENCES])
    clip = np.tile(sentence, int(np.ceil(seconds * voices.RATE / sentence.size)))[: int(seconds * voices.RATE)]
    others = {a: make_one(clip, BY_ID[a]).samples for a in SOURCES}
    others["reconstruction"] = clip + 0.01 * np.random.default_rng(0).standard_normal(clip.size).astype(np.float32)
    speaker.pair(clip[: 3 * voices.RATE], clip[: 3 * voices.RATE], voices.RATE, ge2e)  # warm: first-call costs out
    baseline = peak_rss_mib()
    started, cpu = time.perf_counter(), time.process_time()
    sims = {sid: speaker.pair(clip, samples, voices.RATE, ge2e)[0] for sid, samples in others.items()}
    sim_s, sim_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    started = time.perf_counter()
    judged = verdict.combine(
        {catalog.SIM_GE2E: sims["reconstruction"], catalog.PESQ_WB: 3.0, catalog.STOI: 0.95}, 4.0, 3.8, False
    )
    combine_s = time.perf_counter() - started
    peak = peak_rss_mib()
    queue.put(
        {
            "seconds": seconds,
            "sources": len(others),
            "sim_s": sim_s,
            "sim_cpu_s": sim_cpu_s,  # CPU time of this process: less bent by other work on the machine
            "per_source_s": sim_s / len(others),
            "combine_s": combine_s,
            "baseline_rss_mib": baseline,
            "peak_rss_mib": peak,
            "added_rss_mib": peak - baseline,
            "light": judged.lights.get(catalog.SIM_GE2E),
            "values": sims,
        }
    )


def cost(lengths: list[float]) -> list[dict]:
    return [in_fresh_process(_cost, seconds, timeout_s=1800) for seconds in lengths]


def markdown(result: dict) -> str:
    v = result["values"]
    lines = [
        "# SIM-GE2E: values on real speech made here, and cost",
        "",
        f"`{result['command']}` on {result['cpu']} ({os.cpu_count()} cores), {result['date']}. Model: {v['model']}.",
        "",
        "## Values (cosine; 1 = same)",
        "",
        "| original | itself | re-synthesised (120 wpm) | other sentences | " + " | ".join(ANCHORS) + " |",
        "|---|" + "---|" * (3 + len(ANCHORS)),
    ]
    for voice, row in v["voices"].items():
        cells = [f"{row['itself']:.3f}", f"{row['resynthesised_120wpm']:.3f}"]
        cells.append(", ".join(f"{x:.3f}" for x in row["other_sentences"]))
        cells += [f"{row[a]:.3f}" for a in ANCHORS]
        lines.append(f"| espeak {voice} | " + " | ".join(cells) + " |")
    rec = v["recorded"]
    lines.append(
        "| alsa-utils recording | "
        + f"{rec['itself']:.3f} | — | — | "
        + " | ".join(f"{rec[a]:.3f}" for a in ANCHORS)
        + " |"
    )
    lines += ["", "Different voices, same three sentences:", ""]
    lines += [f"- {pair}: {', '.join(f'{x:.3f}' for x in xs)}" for pair, xs in v["pairs"].items()]
    lines.append(
        f"- alsa-utils recording vs each espeak voice: {', '.join(f'{x:.3f}' for x in rec['vs espeak voices'])}"
    )
    lines += [
        "",
        "## Cost (codec stand-in + 3 anchors, fresh process per length, model loaded and warm)",
        "",
        f"Load average during the run: {load_text(result['load_average'])} (a shared machine): "
        "wall times are inflated by other work; CPU time is this process's own.",
        "",
    ]
    header = ["clip", "SIM for 4 sources (wall)", "CPU time", "per source (wall)", "verdict combine after"]
    rows = (
        [f"{c['seconds']:g} s", *(f"{c[k]:.2f} s" for k in ("sim_s", "sim_cpu_s", "per_source_s"))]
        + [f"{c['combine_s'] * 1000:.2f} ms", f"{c['peak_rss_mib']:.0f} MiB", f"{c['added_rss_mib']:.0f} MiB"]
        for c in result["cost"]
    )
    return "\n".join(lines + table([*header, "peak RSS", "added by SIM"], rows)) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="10,64,600", help="clip lengths in seconds, comma-separated")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    result = {
        **provenance("bench/voice_bench.py"),
        "values": values(),
        "cost": cost([float(x) for x in args.lengths.split(",")]),
        "load_average": os.getloadavg(),
    }
    write_results(args.out, "voice_bench", result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
