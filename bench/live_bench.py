"""Live latency: compute per pushed block and the real-time factor of a live session (the engine's
``core.model.live`` path: streaming input, encoder and decoder one frame at a time), beside the official
``Qwen3TTSTokenizer`` encode + decode of the same clip in the same run; writes ``live_bench-<device>.{json,md}``.

    python -m bench.live_bench --device cuda:0 --checkpoint /tmp/full --out bench/results   # H200
    python -m bench.live_bench --device cpu --checkpoint /tmp/full --seconds 4 --out bench/results

The checkpoint is the full-size random one with every transformer layer scale set to 1.0 in memory;
both paths run in strict fp32 (TF32 off), so the live codes can be compared with the official ones.
On a GPU three steps are compared: ``batched`` (one CUDA-graph step for the frames of every session,
``core.model.live_batcher``), ``graphs`` (a CUDA-graph step per session, the last round's) and
``eager``. Blocks are pushed as fast as the model goes (the compute a microphone's block costs); a real-time
run (``--realtime``) paces them like a microphone. The latency a listener hears is the sum of: the
codec's algorithmic latency (one 80 ms frame: a frame is encoded once its last sample is in; the
encoder has no lookahead), the compute per block, and transport plus playback buffering (measured in
the browser test, docs/live.md). Random weights: nothing here says anything about audio quality.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    agreement,
    full_fp32,
    load_text,
    machine,
    official_decode,
    official_encode,
    set_layer_scales,
    signal,
    snr_db,
    spread,
    sync,
    write_results,
)
from core.codec import FRAME_RATE, SAMPLE_RATE  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("bench.live")
FRAME_MS = 1000.0 / FRAME_RATE  # the codec's algorithmic latency: one frame


def live_run(engine, x: np.ndarray, block_ms: float, realtime: bool) -> dict:
    """One session over ``x`` in blocks of ``block_ms``: per-block compute, lock waits, codes."""
    block = max(1, round(SAMPLE_RATE * block_ms / 1000))
    compute, with_frames, waits = [], [], []
    start = time.perf_counter()
    with engine.live.open(SAMPLE_RATE, paced=False) as session:
        for index, low in enumerate(range(0, x.size, block)):
            if realtime:
                time.sleep(max(0.0, start + (index + 1) * block / SAMPLE_RATE - time.perf_counter()))
            step = session.push(x[low : low + block])
            compute.append(step.compute_s * 1000)
            waits.append(step.wait_s * 1000)
            if step.codes.shape[0]:
                with_frames.append(step.compute_s * 1000)
        result = session.finish()
    wall = time.perf_counter() - start
    return {
        "block_ms": block_ms,
        "realtime": realtime,
        "blocks": len(compute),
        "compute_ms_per_block": spread(compute),
        "compute_ms_per_block_with_frames": spread(with_frames),
        "compute_ms_per_frame": {"median": result.stats["compute_ms_median"], "p95": result.stats["compute_ms_p95"]},
        "lock_wait_ms": spread(waits),
        "realtime_factor": result.stats["realtime_factor"],
        "wall_s": wall,
        "codes": result.codes,
        "audio": result.reconstruction,
    }


def _engine(args, graphs: bool) -> Engine:
    settings = Settings(
        model=str(args.checkpoint),
        device=args.device,
        dtype="float32",
        decode_dtype=args.decode_dtype,
        live_sessions=max(args.sessions),
        live_graphs=graphs,
    )
    engine = Engine(settings)
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    return engine


def packet_run(engine, x: np.ndarray, frames_per_packet: int) -> dict:
    """One session, unpaced, in packets of ``frames_per_packet`` frames: time to first packet (open
    excluded: the first packet's model work), model time per packet, session open time."""
    block = frames_per_packet * 1920
    t0 = time.perf_counter()
    session = engine.live.open(SAMPLE_RATE, paced=False)
    open_s = time.perf_counter() - t0
    per_packet = []
    with session:
        for low in range(0, x.size - block + 1, block):
            t = time.perf_counter()
            step = session.push(x[low : low + block])
            per_packet.append((time.perf_counter() - t) * 1000)
            assert step.codes.shape[0] == frames_per_packet
        result = session.finish()
    return {
        "frames_per_packet": frames_per_packet,
        "open_ms": open_s * 1000,
        "first_packet_ms": per_packet[0],
        "packet_ms": spread(per_packet[1:]),
        "frame_ms": {"median": result.stats["compute_ms_median"], "p95": result.stats["compute_ms_p95"]},
        "codes": result.codes,
        "audio": result.reconstruction,
    }


@contextlib.contextmanager
def past_admission(live):
    """Sessions admitted up to ``--live-sessions`` whatever the measured frame cost allows: to measure
    what the admission would refuse (and show why)."""
    live.capacity = lambda: live.limit  # type: ignore[method-assign]
    try:
        yield
    finally:
        del live.capacity  # type: ignore[attr-defined]  # back to the measured admission


def concurrent_row(engine, x: np.ndarray, sessions: int, codes: np.ndarray) -> dict:
    """:func:`concurrent_run`, its worst session's codes against the official encode, the load."""
    c = concurrent_run(engine, x, sessions)
    agree = [a for a in (agreement(k, codes) for k in c.pop("all_codes")) if a is not None]
    c["codes_agree_official_min"] = min(agree) if agree else None
    c["loadavg"] = os.getloadavg()
    return c


def concurrent_run(engine, x: np.ndarray, sessions: int) -> dict:
    """``sessions`` microphones at once, each pushing 80 ms blocks on its own real-time clock: per
    block the time from the push to its audio (lock waits included), real-time factor per session
    (time in push / audio seconds), how far behind real time each fell, and every session's codes."""
    import threading

    from core.errors import LiveBusy

    block = 1920
    out: list[dict] = [{} for _ in range(sessions)]
    opened = []
    try:
        for _ in range(sessions):
            opened.append(engine.live.open(SAMPLE_RATE, paced=False))
    except LiveBusy as e:  # the measured-cost admission said no: that is the result
        for session in opened:
            session.close()
        return {"sessions": sessions, "refused": str(e), "admitted": len(opened), "all_codes": []}
    barrier = threading.Barrier(sessions)

    def one(index: int) -> None:
        session = opened[index]
        barrier.wait()
        latencies, behind = [], 0.0
        start = time.perf_counter()
        for k, low in enumerate(range(0, x.size, block)):
            time.sleep(max(0.0, start + (k + 1) * block / SAMPLE_RATE - time.perf_counter()))
            t = time.perf_counter()
            session.push(x[low : low + block])
            done = time.perf_counter()
            latencies.append((done - t) * 1000)
            behind = max(behind, done - start - (low + block) / SAMPLE_RATE)
        result = session.finish()
        out[index] = {
            "latency_ms": latencies,
            "rtf": sum(latencies) / 1000 / (x.size / SAMPLE_RATE),
            "behind_s": behind,
            "frame_ms_p95": result.stats["compute_ms_p95"],
            "codes": result.codes,
        }

    threads = [threading.Thread(target=one, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lat = [v for o in out for v in o["latency_ms"]]
    return {
        "sessions": sessions,
        "block_latency_ms": spread(lat),
        "rtf_median": float(np.median([o["rtf"] for o in out])),
        "rtf_max": float(max(o["rtf"] for o in out)),
        "behind_s_max": float(max(o["behind_s"] for o in out)),
        "frame_compute_ms_p95_max": float(max(o["frame_ms_p95"] for o in out)),
        "all_codes": [o["codes"] for o in out],
    }


def run(args) -> dict:
    x = signal(args.seconds, 1, args.device)
    out: dict = {"machine": machine(args.device), "seconds": args.seconds, "decode_dtype": args.decode_dtype}
    out["admit_all"] = args.admit_all
    with full_fp32():
        ref_engine = _engine(args, graphs=True)
        out["layer_scales_set"] = set_layer_scales(ref_engine.model, 1.0)
        out["output_rate_hz"] = ref_engine.output_rate  # the decoder's own rate (the family's 48 kHz: 3,840 a frame)
        out["checkpoint"] = str(args.checkpoint)
        tok = ref_engine._tokenizer  # the official wrapper around the very same model object
        official_decode(tok, official_encode(tok, x[:SAMPLE_RATE]))  # warm-up
        sync(args.device)
        t0 = time.perf_counter()
        codes = official_encode(tok, x)
        sync(args.device)
        t1 = time.perf_counter()
        official_audio = official_decode(tok, codes)
        sync(args.device)
        out["official"] = {"encode_s": t1 - t0, "decode_s": time.perf_counter() - t1}
        out["official"]["realtime_factor"] = (out["official"]["encode_s"] + out["official"]["decode_s"]) / args.seconds
        fp32_audio = ref_engine.decode(codes, original_samples=x.size).samples if args.decode_dtype else None
        cuda = args.device.startswith("cuda")
        variants = [v for v in args.variants if cuda or v == "eager"]
        out["variants"] = {}
        for name in variants:
            graphs = name != "eager"
            engine = ref_engine if graphs or not cuda else _engine(args, graphs=False)
            if engine is not ref_engine:
                set_layer_scales(engine.model, 1.0)
            engine.live.batched = name == "batched"  # one batched step for all sessions, or a step each
            packet_run(engine, x[: 2 * SAMPLE_RATE], 1)  # warm-up
            row: dict = {"packets": [], "concurrent": []}
            for frames in (1, 4):
                r = packet_run(engine, x, frames)
                r["codes_agree_official"] = agreement(r["codes"], codes[: r["codes"].shape[0]])
                n = min(r["audio"].size, official_audio.size)
                r["audio_snr_vs_official_db"] = snr_db(r["audio"][:n], official_audio[:n])
                if fp32_audio is not None:
                    r["audio_snr_vs_fp32_decode_db"] = snr_db(r["audio"][:n], fp32_audio[:n])
                row["packets"].append({k: v for k, v in r.items() if k not in ("codes", "audio")})
                log.info("%s packet %d: %s", name, frames, row["packets"][-1])
            row["admission_capacity"] = engine.live.capacity()  # sessions the measured frame cost admits
            counts = {"batched": args.sessions, "graphs": [n for n in args.sessions if n in (1, 16)]}
            with past_admission(engine.live) if args.admit_all else contextlib.nullcontext():
                for sessions in counts.get(name, args.sessions[:1]) if cuda else args.sessions:
                    row["concurrent"].append(concurrent_row(engine, x, sessions, codes))
                    log.info("%s %d sessions: %s", name, sessions, row["concurrent"][-1])
            out["variants"][name] = row
            if engine is not ref_engine:
                engine.unload()
    out["machine"]["loadavg_end"] = os.getloadavg()
    return out


def markdown(result: dict) -> str:
    m = result["machine"]
    where = m.get("gpu") or f"{m.get('cpu', 'CPU')} ({m.get('cpus', '?')} CPUs, {m['threads']} threads)"
    off = result["official"]
    lines = [
        f"# Live latency panel on {where} (the Qwen3-TTS report's Table 2 format)",
        "",
        f"Checkpoint `{result.get('checkpoint', '?')}` with **random** weights (no quality claims), output rate "
        f"{result.get('output_rate_hz', 24_000) / 1000:g} kHz, layer scales 1.0, strict fp32 encode (TF32 off); "
        f"decode in {result['decode_dtype'] or 'float32'}; {result['seconds']:g} s clip; load average "
        f"{load_text(m['loadavg'])} at the start, "
        f"{load_text(m['loadavg_end'])} at the end. Official offline path, same run: encode "
        f"{off['encode_s']:.3f} s + decode {off['decode_s']:.3f} s = real-time factor {off['realtime_factor']:.3f}.",
        "",
        "First-packet latency = the codec's algorithmic 80 ms (a frame is encoded once its last sample is in) + the "
        "first packet's model work (encode + decode), session open excluded (given beside it). Tokenizer time per "
        "packet: model work for a packet of 1 or 4 frames (80 / 320 ms of audio) once streaming.",
        "",
        "| step | session open (ms) | first packet, 1 frame (ms) | per packet, 1 frame (median / p95 ms) "
        "| per packet, 4 frames (median / p95 ms) | codes = official | audio SNR vs official decode |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in result["variants"].items():
        p1, p4 = row["packets"]
        lines.append(
            f"| {name} | {p1['open_ms']:.0f} | {80 + p1['first_packet_ms']:.1f} (80 + {p1['first_packet_ms']:.1f}) | "
            f"{p1['packet_ms']['median']:.1f} / {p1['packet_ms']['p95']:.1f} | "
            f"{p4['packet_ms']['median']:.1f} / {p4['packet_ms']['p95']:.1f} | "
            f"{p1['codes_agree_official']:.2%} | {p1['audio_snr_vs_official_db']:.1f} dB |"
        )
    lines += [
        "",
        "Concurrent sessions, each paced like a microphone (80 ms blocks on its own clock). Real-time factor: a "
        "session's time in push (model work and waits for the lock) / its audio seconds; below 1 it keeps up. "
        "Admission from the measured frame cost: "
        + ", ".join(f"{n} {r.get('admission_capacity')} sessions" for n, r in result["variants"].items())
        + (" (run past it: --admit-all)." if result.get("admit_all") else "."),
        "",
        "| step | sessions | RTF (median / worst session) | block latency (median / p95 / max ms) "
        "| frame compute p95, worst session (ms) | most behind real time (s) | codes = official (worst session) | load average |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in result["variants"].items():
        for c in row["concurrent"]:
            if "refused" in c:
                lines.append(f"| {name} | {c['sessions']} | refused after {c['admitted']}: {c['refused']} |||||||")
                continue
            b = c["block_latency_ms"]
            lines.append(
                f"| {name} | {c['sessions']} | {c['rtf_median']:.3f} / {c['rtf_max']:.3f} | "
                f"{b['median']:.1f} / {b['p95']:.1f} / {b['max']:.1f} | {c['frame_compute_ms_p95_max']:.1f} | "
                f"{c['behind_s_max']:.2f} | {c['codes_agree_official_min']:.2%} | {c['loadavg'][0]:.1f} |"
            )
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--sessions", type=lambda s: [int(v) for v in s.split(",")], default=[1, 4, 16])
    p.add_argument("--decode-dtype", default=None, choices=[None, "float32", "bfloat16"])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--admit-all", action="store_true", help="run every --sessions count past the measured admission")
    p.add_argument(
        "--variants",
        type=lambda s: s.split(","),
        default=["batched", "graphs", "eager"],
        help="batched: one CUDA-graph step for all sessions; graphs: a graph step per session; eager",
    )
    p.add_argument("--tag", default="", help="suffix of the result files (live_panel-<device><tag>.md)")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = parse_args(argv)
    result = run(args)
    tag = ("cuda" if args.device.startswith("cuda") else "cpu") + args.tag
    write_results(args.out, f"live_panel-{tag}", result, markdown(result))
    return result


if __name__ == "__main__":
    main()
