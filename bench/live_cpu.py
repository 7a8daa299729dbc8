"""Live on a CPU: the Table-2 panel (time to first packet, tokenizer time per packet, real-time factor)
for packets of 1, 2 and 4 frames, with the official offline path timed in the same run.

    python -m bench.live_cpu --checkpoint /tmp/full [--seconds 6] [--packets 1,2,4] [--winograd 6,0] [--threads 2]
        [--sessions 1,4,16]

Full-size **random** checkpoint (no quality claims), every transformer layer scale set to 1.0 (context
matters), float32. Per packet size: one warm-up session, then one unpaced session of ``--seconds``
pushed a packet at a time; the model work of each push is timed (``LiveStep.compute_s``) and the CPU
time of the process beside it (on a shared machine wall time counts the others' work; CPU time of a
1-thread run does not). Codes are compared with the official ``Qwen3TTSTokenizer.encode`` of the same
clip, audio with the official decode. Then ``--sessions`` concurrent microphones, each pushing 80 ms
blocks on its own real-time clock (``bench.live_bench.concurrent_run``), at the packet size live picks
on its own (auto) and the first ``--winograd``, admitted past what the measured frame cost allows (the
admission is reported beside them). Writes ``bench/results/live_cpu<tag>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import agreement, machine, official_decode, official_encode, set_layer_scales, signal  # noqa: E402
from bench.harness import snr_db as _snr  # noqa: E402
from bench.harness import spread as _spread  # noqa: E402
from bench.live_bench import concurrent_row, past_admission  # noqa: E402
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.model.torch_threads import in_passing_thread  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("bench.live_cpu")
FRAME_MS = 1000 * SAMPLES_PER_FRAME / SAMPLE_RATE


def session_run(engine, x: np.ndarray, packet: int, winograd: int = 0) -> dict:
    """One unpaced session over ``x`` pushed ``packet`` frames at a time, its decoder's kernel-7
    convolutions as Winograd F(``winograd``, 7) (0: direct)."""
    engine.settings = dataclasses.replace(engine.settings, live_packet_frames=packet, live_winograd=winograd)
    block = packet * SAMPLES_PER_FRAME
    per_packet, cpu_per_packet = [], []
    t0 = time.perf_counter()
    session = engine.live.open(SAMPLE_RATE, paced=False)
    open_ms = (time.perf_counter() - t0) * 1000
    with session:
        for low in range(0, x.size, block):
            c0 = time.process_time()
            step = session.push(x[low : low + block])
            cpu = time.process_time() - c0
            if step.codes.shape[0]:
                per_packet.append(step.compute_s * 1000)
                cpu_per_packet.append(cpu * 1000)
        result = session.finish()
    seconds = x.size / SAMPLE_RATE
    return {
        "packet_frames": packet,
        "winograd": winograd,
        "open_ms": open_ms,
        "first_packet_ms": per_packet[0],
        "packet_ms": _spread(per_packet[1:]),
        "packet_cpu_ms": _spread(cpu_per_packet[1:]),
        "realtime_factor": sum(per_packet) / 1000 / seconds,
        "codes": result.codes,
        "audio": result.reconstruction,
    }


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    out: dict = {"machine": machine("cpu"), "seconds": args.seconds, "threads": args.threads}
    out["machine"]["avx512_bf16"] = "avx512_bf16" in flags
    out["machine"]["avx512f"] = "avx512f" in flags
    engine = Engine(Settings(model=str(args.checkpoint), device="cpu", dtype="float32", decode_dtype=args.decode_dtype))
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    # the bench's own torch work in threads that end, so that the sessions' thread is the only one with an
    # OpenMP pool, as in the server (core.model.torch_threads)
    out["layer_scales_set"] = in_passing_thread(set_layer_scales, engine.model, 1.0)
    x = in_passing_thread(signal, args.seconds, 1, "cpu")
    tok = engine._tokenizer  # the official wrapper around the very same model object

    def official():
        with torch.inference_mode():
            official_decode(tok, official_encode(tok, x[:SAMPLE_RATE]))  # warm-up
            t0, c0 = time.perf_counter(), time.process_time()
            codes = official_encode(tok, x)
            t1, c1 = time.perf_counter(), time.process_time()
            official_audio = official_decode(tok, codes)
            t2, c2 = time.perf_counter(), time.process_time()
        return codes, official_audio, (t0, t1, t2), (c0, c1, c2)

    codes, official_audio, (t0, t1, t2), (c0, c1, c2) = in_passing_thread(official)
    out["official"] = {
        "encode_s": t1 - t0,
        "decode_s": t2 - t1,
        "realtime_factor": (t2 - t0) / args.seconds,
        "cpu_realtime_factor": (c2 - c0) / args.seconds,
        "encode_cpu_s": c1 - c0,
        "decode_cpu_s": c2 - c1,
    }
    log.info("official: %s", out["official"])
    out["packets"] = []
    for packet, winograd in [(p, w) for w in args.winograd for p in args.packets]:
        session_run(engine, x[: 2 * SAMPLE_RATE], packet, winograd)  # warm-up
        r = session_run(engine, x, packet, winograd)
        r["codes_agree_official"] = agreement(r["codes"], codes[: r["codes"].shape[0]])
        n = min(r["audio"].size, official_audio.size)
        r["audio_snr_vs_official_db"] = _snr(r["audio"][:n], official_audio[:n])
        r["loadavg"] = os.getloadavg()
        out["packets"].append({k: v for k, v in r.items() if k not in ("codes", "audio")})
        log.info("packet %d: %s", packet, out["packets"][-1])
    out["concurrent"] = concurrent_rows(engine, x, codes, args.sessions, args.winograd[0])
    out["decode_dtype"] = args.decode_dtype or "float32"
    out["machine"]["loadavg_end"] = os.getloadavg()
    return out


def concurrent_rows(engine, x: np.ndarray, codes, counts: list[int], winograd: int) -> dict:
    """Paced concurrent sessions at the auto packet size, admitted past the measured admission."""
    if not counts:
        return {"rows": []}
    engine.settings = dataclasses.replace(
        engine.settings, live_packet_frames=0, live_winograd=winograd, live_sessions=max(counts)
    )
    live = engine.live
    out = {"packet_frames": live.packet_frames(), "winograd": winograd, "admitted": live.capacity(), "rows": []}
    with past_admission(live):
        for sessions in counts:
            out["rows"].append(concurrent_row(engine, x, sessions, codes))
            log.info("%d sessions: %s", sessions, out["rows"][-1])
    return out


def markdown(result: dict) -> str:
    m, off = result["machine"], result["official"]
    lines = [
        f"# Live on the CPU: {m.get('cpu', 'CPU')} ({m.get('cpus', '?')} CPUs, {result['threads']} threads; "
        f"avx512_bf16: {'yes' if m['avx512_bf16'] else 'no'}) — the Qwen3-TTS report's Table 2 format",
        "",
        f"Full-size **random** checkpoint (no quality claims), layer scales 1.0, float32 encode, "
        f"{result['decode_dtype']} decode; {result['seconds']:g} s clip; load average "
        f"{', '.join(f'{v:.1f}' for v in m['loadavg'])} at the start, "
        f"{', '.join(f'{v:.1f}' for v in m['loadavg_end'])} at the end (a shared machine inflates wall times). "
        f"Official offline path, same run: encode {off['encode_s']:.2f} s + decode {off['decode_s']:.2f} s = "
        f"real-time factor {off['realtime_factor']:.3f} (CPU time / audio: {off['cpu_realtime_factor']:.3f}).",
        "",
        "Time to first packet = the packet's audio (a packet is encoded once its last sample is in) + its model "
        "work (encode + decode); session open given beside it. Real-time factor: model work / audio seconds, "
        "one session (below 1 it keeps up; the target is ≤ 0.6).",
        "",
        "Decoder convolutions: Winograd F(m, 7) for the residual units' kernel-7 convolutions (`--live-winograd m`, "
        "`core/nn/winograd.py`) or direct (0); the rest as `core/nn/cpu_convs.py` picks. The SNR column is "
        "against the official fp32 decode of the same codes.",
        "",
        "| packet | decoder convolutions | open (ms) | time to first packet (ms) "
        "| tokenizer time per packet, median / p95 (ms) "
        "| CPU time per packet, median (ms) | RTF, 1 session | RTF / official RTF | codes = official "
        "| audio SNR vs official decode | load (1 min) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in result["packets"]:
        audio_ms = p["packet_frames"] * FRAME_MS
        lines.append(
            f"| {p['packet_frames']} frame(s), {audio_ms:.0f} ms | "
            f"{'Winograd F({}, 7)'.format(p['winograd']) if p.get('winograd') else 'direct'} | {p['open_ms']:.0f} | "
            f"{audio_ms + p['first_packet_ms']:.0f} ({audio_ms:.0f} + {p['first_packet_ms']:.0f}) | "
            f"{p['packet_ms']['median']:.0f} / {p['packet_ms']['p95']:.0f} | {p['packet_cpu_ms']['median']:.0f} | "
            f"**{p['realtime_factor']:.3f}** | {p['realtime_factor'] / off['realtime_factor']:.2f} | "
            f"{p['codes_agree_official']:.2%} | {p['audio_snr_vs_official_db']:.1f} dB | {p['loadavg'][0]:.1f} |"
        )
    lines += _concurrent_markdown(result.get("concurrent") or {"rows": []})
    return "\n".join(lines) + "\n"


def _concurrent_markdown(c: dict) -> list[str]:
    if not c["rows"]:
        return []
    lines = [
        "",
        f"Concurrent sessions, each paced like a microphone (80 ms blocks on its own clock), "
        f"{c['packet_frames']}-frame packets (auto), "
        f"{'Winograd F({}, 7)'.format(c['winograd']) if c['winograd'] else 'direct convolutions'}. Real-time "
        "factor: a session's time in push (model work and waits for the lock) / its audio seconds; below 1 it "
        f"keeps up. The measured frame cost admits **{c['admitted']}** session(s)"
        + ("; the rows past it are run to show why." if max(r["sessions"] for r in c["rows"]) > c["admitted"] else "."),
        "",
        "| sessions | RTF (median / worst session) | block latency (median / p95 / max ms) "
        "| most behind real time (s) | codes = official (worst session) | load (1 min) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in c["rows"]:
        b = r["block_latency_ms"]
        agree = r["codes_agree_official_min"]
        lines.append(
            f"| {r['sessions']} | {r['rtf_median']:.3f} / {r['rtf_max']:.3f} | "
            f"{b['median']:.1f} / {b['p95']:.1f} / {b['max']:.1f} | {r['behind_s_max']:.2f} | "
            f"{'n/a' if agree is None else f'{agree:.2%}'} | {r['loadavg'][0]:.1f} |"
        )
    return lines


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--packets", type=lambda s: [int(v) for v in s.split(",")], default=[1, 2, 4])
    p.add_argument(
        "--winograd",
        type=lambda s: [int(v) for v in s.split(",")],
        default=[6, 0],
        help="Winograd tiles of the live decoder to run each packet size with (0: direct convolutions)",
    )
    p.add_argument(
        "--sessions",
        type=lambda s: [int(v) for v in s.split(",") if v],
        default=[1, 4, 16],
        help="concurrent paced sessions to run (empty: none)",
    )
    p.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--decode-dtype", default=None, choices=[None, "float32", "bfloat16"])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--tag", default="", help="suffix of the result files (live_cpu<tag>.md)")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = parse_args(argv)
    result = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"live_cpu{args.tag}.json").write_text(json.dumps(result, indent=2))
    (args.out / f"live_cpu{args.tag}.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
