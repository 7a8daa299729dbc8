"""The precision sweep and a decode-parity check of the official ``chunked_decode`` on one device;
writes ``parity_bench-<device>.{json,md}`` (and the parity check's error curve as a PNG).

    python -m bench.parity_bench --device cuda:0 --checkpoint /tmp/full --out bench/results   # H200
    python -m bench.parity_bench --device cpu --checkpoint /tmp/full --out bench/results      # 2-core CPU

The checkpoint is the full-size random one (built when missing) with every transformer layer scale set
to 1.0 in memory, so context matters (NOTES.md). The sweep (``core.parity.precision``) runs one clip
through encode and decode in each precision against the engine's strict-fp32 reference. The peer: the
official ``chunked_decode`` (qwen_tts, strict fp32 on both sides, 300-frame chunks with 25 frames of left context, and the same
with the 72-frame window as context) decodes the fp32 codes, and ``core.parity.decode_parity`` judges
its audio against the engine's decode. Random weights: nothing here says anything about audio quality.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import ensure_checkpoint, set_layer_scales, signal, sync  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.nn import decoding  # noqa: E402
from core.parity import decode_parity, inputs, precision, report  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("bench.parity")
PEERS = {"official-300-25": (300, 25), "official-300-72": (300, 72)}  # name -> (chunk frames, left context)


def peer_parity(
    engine, codes: np.ndarray, chunk: int, context: int, device: str
) -> tuple[dict, decode_parity.DecodeParity]:
    """The official chunked_decode's audio judged against the engine's decode of the same codes."""
    with precision.tf32(False):  # both sides in strict fp32 (NOTES.md: the same TF32 flags on both)
        with engine.model_work("decode") as (model, _runner), torch.inference_mode():
            sync(device)
            started = time.perf_counter()
            on_device = torch.from_numpy(codes).to(next(model.parameters()).device)
            wav = decoding.decode_official(model, on_device, chunk, context).float().cpu().numpy()
            sync(device)
            seconds = time.perf_counter() - started
        ours = engine.decode(codes).samples
    their = inputs.TheirAudio(wav, SAMPLE_RATE, 1, "FLOAT", 0, None)
    result = decode_parity.compare(np.asarray(ours, np.float32), their, inputs.Codes(codes, None, "npy"))
    out = result.to_dict()
    out["peer_decode_s"] = round(seconds, 4)
    out.pop("curve", None)
    return out, result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--checkpoint", default="/tmp/full")
    p.add_argument("--seconds", type=float, default=30.0, help="clip length (the sweep and the peer check)")
    p.add_argument("--precisions", default="", help="comma-separated (default: every one for the device)")
    p.add_argument("--no-peer", action="store_true", help="only the sweep")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    ensure_checkpoint(Path(args.checkpoint))
    engine = Engine(Settings(model=str(args.checkpoint), device=args.device))
    if not engine.load():
        raise SystemExit(engine.error)
    scales = set_layer_scales(engine.model, 1.0)
    clip = signal(args.seconds, 0, args.device)
    wanted = tuple(x for x in args.precisions.split(",") if x) or None
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    sweep = precision.sweep(engine, clip, wanted)
    sweep_s = time.perf_counter() - started
    kind = "cuda" if args.device.startswith("cuda") else "cpu"
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {
        "device": args.device,
        "device_name": sweep.device_name,
        "host": platform.node(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_average_1min": [
            round(load_before, 2),
            round(os.getloadavg()[0], 2),
        ],  # before and after: a shared machine
        "checkpoint": "full-size random, layer scales 1.0 (" + str(scales) + " scales set in memory)",
        "clip": f"{args.seconds:g} s speech-like synthetic signal (bench.harness.signal, seed 0)",
        "sweep": sweep.to_dict(),
        "sweep_wall_s": round(sweep_s, 2),
        "note": "Random weights: nothing here says anything about audio quality.",
    }
    peers = {}
    if not args.no_peer:
        codes = engine.encode_array(clip).codes
        for name, (chunk, context) in PEERS.items():
            peers[name], result = peer_parity(engine, codes, chunk, context, args.device)
            png = args.out / f"parity_bench-{kind}-{name}.png"
            png.unlink(missing_ok=True)
            report.curve_png(result, png)
            log.info("%s: %s", name, result.verdict.sentence if result.verdict else "")
    doc["peers"] = peers
    (args.out / f"parity_bench-{kind}.json").write_text(json.dumps(doc, indent=2, default=str), encoding="utf-8")
    (args.out / f"parity_bench-{kind}.md").write_text(markdown(doc), encoding="utf-8")
    print(markdown(doc))
    return 0


def markdown(doc: dict) -> str:
    s = doc["sweep"]
    lines = [
        f"# Precision sweep and official-decoder parity: {doc['device_name']} ({doc['device']})",
        "",
        f"{doc['checkpoint']}; {doc['clip']}; torch {doc['torch']}, {doc['threads']} threads, load average "
        f"{doc['load_average_1min'][0]} → {doc['load_average_1min'][1]}. {doc['note']}",
        "",
        "| precision | encode s | decode s | codes equal to fp32 | first differing frame | decode SNR vs fp32 (dB) | broken chunks | error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in s["rows"]:
        lines.append(
            f"| {r['label']} | {r['encode_s']} | {r['decode_s']} | {r['codes_equal']} | {r['first_difference_frame']} | "
            f"{r['snr_db']} | {len(r['broken'])} of {r['chunks']} | {r['error'] or ''} |"
        )
    lines += ["", "Recommendation:", ""] + [f"- {n['text']}" for n in s["recommendation"]]
    for name, peer in doc.get("peers", {}).items():
        lines += ["", f"## {name}", "", peer["verdict"]["sentence"], "", f"peer decode {peer['peer_decode_s']} s"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
