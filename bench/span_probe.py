"""Probe: does a longer encoder-transformer span make long fp32 encodes agree 100% with the
official whole-clip encode, and what does it cost in peak memory and time?

    python -m bench.span_probe --checkpoint /tmp/full --spans 120,600,1800 --lengths 600,1800

Writes bench/results/span_probe.json and .md (or --out). GPU only; random weights.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from bench.harness import ROOT, agreement, full_fp32, official_encode, signal, timed, try_oom
from core.model.engine import Engine
from core.settings import Settings

log = logging.getLogger("bench")


def probe(checkpoint: Path, spans: list[float], lengths: list[float], device: str) -> list[dict]:
    rows = []
    for seconds in lengths:
        x = signal(seconds, 1, device)
        official = None
        for span in spans:
            engine = Engine(Settings(model=str(checkpoint), device=device, encode_span_s=span))
            engine.load()
            engine.encode_array(signal(10, 99, device))  # warm-up
            codes, enc_s, peak = timed(lambda: engine.encode_array(x).codes, device)
            if official is None:
                tok = engine._tokenizer  # the official wrapper around the same weights
                with full_fp32():
                    official = try_oom(lambda: official_encode(tok, x))
            rows.append(
                {
                    "seconds": seconds,
                    "span_s": span,
                    "encode_s": round(enc_s, 3),
                    "encode_peak_mib": None if peak is None else round(peak, 1),
                    "agreement": agreement(codes, official),
                }
            )
            log.info("%s", rows[-1])
            engine.unload()
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| length s | span s | encode s | encode peak GiB | agreement vs official whole fp32 |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        agree = "—" if r["agreement"] is None else f"{100 * r['agreement']:.4f}%"
        lines.append(
            f"| {r['seconds']:.0f} | {r['span_s']:.0f} | {r['encode_s']:.3f} | {(r['encode_peak_mib'] or 0) / 1024:.2f} | {agree} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--spans", default="120,600,1800")
    p.add_argument("--lengths", default="600,1800")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    rows = probe(
        args.checkpoint,
        [float(s) for s in args.spans.split(",")],
        [float(s) for s in args.lengths.split(",")],
        args.device,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "span_probe.json").write_text(json.dumps(rows, indent=2))
    (args.out / "span_probe.md").write_text(markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
