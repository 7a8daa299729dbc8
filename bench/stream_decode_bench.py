"""Stream decode for TTS servers (Table-2 panel, decode alone): per-packet decode time, time to first
audio and real-time factor at 1, 16 and 64 concurrent streams of ``engine.stream_decoder()``
(``core.model.stream_decoder``), beside windowed re-decoding with 25 and 72 frames of left context
(what servers built on the official ``chunked_decode`` do per packet: the official decoder's forward
over context + packet, keeping the packet's samples) and the official ``chunked_decode`` of the whole
utterance, on the same codes in the same run; every row's SNR against the whole decode. Writes
``stream_decode-<device>.{json,md}``.

    python -m bench.stream_decode_bench --checkpoint /tmp/full --device cuda:0 --out bench/results   # H200
    python -m bench.stream_decode_bench --checkpoint /tmp/tiny --device cpu --frames 40 --streams 1,4 --out /tmp/b

The checkpoint's transformer layer scales are set to 1.0 in memory (so context matters) and every path
runs in strict fp32 (TF32 off). Streams push packets as fast as the model goes (the worst case for
sharing); a stream keeps real time when its audio seconds per wall second is at least 1. Random codes
and random weights: nothing here says anything about audio quality.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    full_fp32,
    load_text,
    machine,
    provenance,
    set_layer_scales,
    snr_db,
    spread,
    sync,
    write_results,
)
from core.model.engine import Engine  # noqa: E402
from core.nn.decoding import samples_per_frame  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("bench.stream_decode")
CONTEXTS = (25, 72)  # windowed re-decode's left context (the official 25; the decoder's 72-frame window)


def random_codes(frames: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2048, size=(frames, 16))


def stream_once(engine, codes: np.ndarray, packet: int, device: str) -> dict:
    """One stream through ``engine.stream_decoder()``: per-packet wall times, first audio, its audio."""
    times, parts = [], []
    opened = time.perf_counter()
    with engine.stream_decoder() as decoder:
        first_audio = None
        for low in range(0, codes.shape[0], packet):
            start = time.perf_counter()
            parts.append(decoder.push(codes[low : low + packet]))
            sync(device)
            now = time.perf_counter()
            times.append(now - start)
            first_audio = first_audio if first_audio is not None else now - opened
        parts.append(decoder.finish())
        wall = time.perf_counter() - opened
        rate = decoder.sample_rate
    audio = np.concatenate(parts)
    return {"times": times, "first_audio_s": first_audio, "wall_s": wall, "audio": audio, "audio_s": audio.size / rate}


def windowed(engine, codes: np.ndarray, packet: int, context: int, device: str) -> dict:
    """Each packet re-decoded with ``context`` frames before it by the official decoder's forward."""
    decoder = engine.model.decoder
    per_frame = samples_per_frame(decoder)
    dev = next(decoder.parameters()).device
    times, parts = [], []
    with torch.inference_mode():
        for low in range(0, codes.shape[0], packet):
            high = min(low + packet, codes.shape[0])
            window = torch.from_numpy(codes[max(0, low - context) : high].T[None]).to(dev)
            start = time.perf_counter()
            wav = decoder(window).reshape(-1)[-(high - low) * per_frame :].float().cpu().numpy()
            sync(device)
            times.append(time.perf_counter() - start)
            parts.append(wav)
    return {"times": times, "audio": np.concatenate(parts)}


def concurrent(engine, streams: int, frames: int, packet: int, device: str, whole_of) -> dict:
    """``streams`` streams at once, each in its own thread, as fast as the model goes."""
    codes = [random_codes(frames, 100 + i) for i in range(streams)]
    results: list = [None] * streams
    errors: list = []
    barrier = threading.Barrier(streams)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = stream_once(engine, codes[i], packet, device)
        except Exception as e:  # noqa: BLE001 - reported in the row
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        return {"streams": streams, "packet_frames": packet, "refused": errors[0], "admitted": streams - len(errors)}
    speeds = [r["audio_s"] / r["wall_s"] for r in results]
    checked = range(min(streams, 4))  # the whole decode of the first few streams (each costs a decode)
    snrs = [snr_db(results[i]["audio"], whole_of(codes[i])) for i in checked]
    packets = [t for r in results for t in r["times"]]
    return {
        "streams": streams,
        "packet_frames": packet,
        "packet_ms": {k: 1000 * v for k, v in spread(packets).items()},
        "first_audio_ms_max": 1000 * max(r["first_audio_s"] for r in results),
        "realtime_x_min": min(speeds),
        "realtime_x_median": float(np.median(speeds)),
        "all_real_time": min(speeds) >= 1.0,
        "snr_db_min": min(snrs),
        "loadavg": list(__import__("os").getloadavg()),
    }


def run(args) -> dict:
    device = args.device
    engine = Engine(
        Settings(model=str(args.checkpoint), device=device, dtype="float32", decode_streams=max(args.streams))
    )
    assert engine.load(), engine.error
    set_layer_scales(engine.model, 1.0)
    out: dict = {
        "machine": machine(device),
        "provenance": provenance("-m bench.stream_decode_bench"),
        "frames": args.frames,
    }
    with full_fp32():
        codes = random_codes(args.frames, 7)
        whole = engine.decode(codes).samples
        with torch.inference_mode():
            official = engine.model.decoder.chunked_decode(torch.from_numpy(codes.T[None]).to(engine.device))  # warm
            sync(device)
            start = time.perf_counter()
            official = engine.model.decoder.chunked_decode(torch.from_numpy(codes.T[None]).to(engine.device))
            sync(device)
            official_s = time.perf_counter() - start
        official = official.reshape(-1)[: whole.size].float().cpu().numpy()
        out["official_chunked_decode"] = {"seconds": official_s, "snr_db": snr_db(official, whole)}
        stream_once(engine, codes[:8], 1, device)  # warm: the batched step is built at the first stream
        rows = []
        for packet in args.packets:
            ours = stream_once(engine, codes, packet, device)
            rows.append(
                {
                    "path": "stream decoder (state carried)",
                    "packet_frames": packet,
                    "packet_ms": {k: 1000 * v for k, v in spread(ours["times"]).items()},
                    "first_audio_ms": 1000 * ours["first_audio_s"],
                    "snr_db": snr_db(ours["audio"], whole),
                }
            )
            for context in CONTEXTS:
                win = windowed(engine, codes, packet, context, device)
                rows.append(
                    {
                        "path": f"windowed re-decode, {context} frames of context (official decoder)",
                        "packet_frames": packet,
                        "packet_ms": {k: 1000 * v for k, v in spread(win["times"]).items()},
                        "first_audio_ms": 1000 * win["times"][0],
                        "snr_db": snr_db(win["audio"], whole),
                    }
                )
        out["one_stream"] = rows
        whole_of = lambda c: engine.decode(c).samples  # noqa: E731
        out["concurrent"] = [concurrent(engine, n, args.frames, 4, device, whole_of) for n in args.streams]
    engine.unload()
    return out


def markdown(r: dict) -> str:
    m = r["machine"]
    where = m.get("gpu") or m.get("cpu", "?")
    lines = [
        f"# Stream decode ({where}, strict fp32, layer scales 1.0, {r['frames']} frames of random codes)",
        "",
        f"Command: `{r['provenance']['command']}` ({r['provenance']['date']}). Random weights: no quality claim.",
        "",
        f"Official `chunked_decode` of the whole utterance: {r['official_chunked_decode']['seconds'] * 1000:.1f} ms, "
        f"SNR {r['official_chunked_decode']['snr_db']:.1f} dB against the whole decode.",
        "",
        "| path | packet (frames) | per packet p50 / p95 / max (ms) | first audio (ms) | SNR vs whole decode (dB) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in r["one_stream"]:
        p = row["packet_ms"]
        lines.append(
            f"| {row['path']} | {row['packet_frames']} | {p['median']:.2f} / {p['p95']:.2f} / {p['max']:.2f} | "
            f"{row['first_audio_ms']:.1f} | {row['snr_db']:.1f} |"
        )
    lines += [
        "",
        "| streams at once (4-frame packets) | per packet p50 / p95 (ms) | first audio max (ms) | x real time min / median | all in real time | SNR min (dB) | load |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in r["concurrent"]:
        if "refused" in c:
            lines.append(f"| {c['streams']} | refused after {c['admitted']}: {c['refused']} ||||||")
            continue
        p = c["packet_ms"]
        lines.append(
            f"| {c['streams']} | {p['median']:.2f} / {p['p95']:.2f} | {c['first_audio_ms_max']:.1f} | "
            f"{c['realtime_x_min']:.1f} / {c['realtime_x_median']:.1f} | {'yes' if c['all_real_time'] else 'no'} | "
            f"{c['snr_db_min']:.1f} | {load_text(c['loadavg'])} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--frames", type=int, default=250, help="frames of codes per stream (250: 20 s)")
    p.add_argument("--packets", type=ints, default=[1, 4], help="packet sizes of the one-stream rows")
    p.add_argument("--streams", type=ints, default=[1, 16, 64], help="concurrent stream counts")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--tag", default="", help="suffix of the result files")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = parse_args(argv)
    result = run(args)
    device = "cuda" if args.device.startswith("cuda") else "cpu"
    write_results(args.out, f"stream_decode-{device}{args.tag}", result, markdown(result))
    return result


if __name__ == "__main__":
    main()
