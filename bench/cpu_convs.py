"""Each convolution of a CPU live step, timed through every product ``core.nn.cpu_convs`` can pick.

    python -m bench.cpu_convs --checkpoint /tmp/full [--packet 4] [--threads 1] [--tag -quiet]

Full-size **random** checkpoint (no quality claims), layer scales 1.0, float32. One live session of
2 s runs with 4-frame packets (``--packet``); every convolution call of its encoder and decoder is
recorded once per distinct (layer, input shape), then timed through oneDNN channels-last (what the
decoder used before ``cpu_convs``), the unfolded matrix product, and Winograd F(6, 7) and F(4, 7)
where they apply, interleaved, median of ``--repeats``. The path ``CpuConvs.path`` picks is marked;
per second of audio the sums show what each rule saves. Writes ``bench/results/cpu_convs<tag>.json``
and ``.md``.
"""

from __future__ import annotations

import argparse
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

from bench.harness import set_layer_scales, signal  # noqa: E402
from bench.live_bench import machine  # noqa: E402
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME  # noqa: E402
from core.model.engine import Engine  # noqa: E402
from core.nn import conv_layout, cpu_convs, winograd  # noqa: E402
from core.settings import Settings  # noqa: E402

log = logging.getLogger("bench.cpu_convs")


class Recorder(cpu_convs.CpuConvs):
    """Records each distinct call (layer, input shape) with how often it came."""

    calls: dict = {}

    def conv(self, conv, x):
        key = ("conv", id(conv), tuple(x.shape))
        held = Recorder.calls.setdefault(key, {"conv": conv, "x": x.clone(memory_format=torch.preserve_format), "n": 0})
        held["n"] += 1
        return super().conv(conv, x)

    def transposed_steps(self, conv, x, overlap):
        key = ("transposed", id(conv), tuple(x.shape), overlap)
        held = Recorder.calls.setdefault(key, {"conv": conv, "x": x.clone(), "n": 0, "overlap": overlap})
        held["n"] += 1
        return super().transposed_steps(conv, x, overlap)


def _median_ms(f, repeats: int) -> float:
    f()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1000)


def time_call(key, held, repeats: int) -> dict:
    conv, x = held["conv"], held["x"]
    onednn = conv_layout.ChannelsLastConvs()
    row = {
        "kind": key[0],
        "in": conv.in_channels,
        "out": conv.out_channels,
        "kernel": conv.kernel_size[0],
        "stride": conv.stride[0],
        "dilation": conv.dilation[0],
        "input_steps": int(x.shape[-1]),
        "calls": held["n"],
    }
    with torch.inference_mode():
        if key[0] == "transposed":
            overlap = held["overlap"]
            gemm = cpu_convs.CpuConvs(winograd_tile=None)
            row["onednn_ms"] = _median_ms(lambda: onednn.transposed_steps(conv, x, overlap), repeats)
            row["gemm_ms"] = _median_ms(lambda: gemm.transposed_steps(conv, x, overlap), repeats)
            row["picked"] = "gemm"
            return row
        row["onednn_ms"] = _median_ms(lambda: onednn.conv(conv, x), repeats)
        gemm = cpu_convs.CpuConvs(winograd_tile=None)
        if gemm.path(conv, x) != "onednn" or conv.groups == 1:
            prepared = cpu_convs._gemm_weight(conv) if conv.groups == 1 else None
            if prepared is not None and x.stride(1) == 1 and conv.padding[0] == 0:
                row["gemm_ms"] = _median_ms(lambda: cpu_convs._unfolded(conv, prepared, x), repeats)
        for tile in (4, 6):
            if conv.kernel_size[0] == winograd.KERNEL and conv.groups == 1 and conv.stride[0] == 1:
                try:
                    p = winograd.Prepared(conv, tile)
                except ValueError:
                    continue
                row[f"winograd{tile}_ms"] = _median_ms(lambda p=p: winograd.conv(p, x), repeats)
        picked = Recorder().path(conv, x)  # the default tile's rules
        row["picked"] = f"winograd{cpu_convs.WINOGRAD_TILE}" if picked == "winograd" else picked
    return row


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    settings = Settings(model=str(args.checkpoint), device="cpu", dtype="float32", live_packet_frames=args.packet)
    engine = Engine(settings)
    if not engine.load():
        raise SystemExit(f"engine did not load: {engine.error}")
    set_layer_scales(engine.model, 1.0)
    recorder = Recorder(winograd_tile=settings.live_winograd)
    x = signal(args.seconds, 1, "cpu")
    fast = engine._fast  # the loaded decoder runner (``core.nn.fast_decode.FastDecoder``)
    assert fast is not None
    fast._winograd_convs[settings.live_winograd] = recorder  # what the live streams' decoders run with
    session = engine.live.open(SAMPLE_RATE, paced=False)
    with session:
        session.encoder.seanet.convs = Recorder(winograd_tile=None)  # the session's encoder convolutions
        block = args.packet * SAMPLES_PER_FRAME
        for low in range(0, x.size, block):
            session.push(x[low : low + block])
        session.finish()
    rows = [time_call(key, held, args.repeats) for key, held in Recorder.calls.items()]
    seconds = x.size / SAMPLE_RATE
    totals: dict[str, float] = {}
    for row in rows:
        for name in ("onednn", "gemm", "winograd4", "winograd6"):
            ms = row.get(f"{name}_ms", row["onednn_ms"])
            totals[name] = totals.get(name, 0.0) + ms * row["calls"] / seconds
        totals["picked"] = (
            totals.get("picked", 0.0) + row.get(f"{row['picked']}_ms", row["onednn_ms"]) * row["calls"] / seconds
        )
    out = {
        "machine": machine("cpu"),
        "threads": args.threads,
        "packet_frames": args.packet,
        "seconds": seconds,
        "rows": rows,
        "ms_per_audio_second": totals,
        "loadavg_end": os.getloadavg(),
    }
    return out


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"# The convolutions of a CPU live step, per product: {m.get('cpu', '?')}, {result['threads']} thread(s), "
        f"{result['packet_frames']}-frame packets",
        "",
        "Full-size **random** checkpoint (no quality claims), layer scales 1.0, float32; one distinct "
        "(layer, input) per row, median time per call; `picked` is what `core.nn.cpu_convs.CpuConvs.path` runs. "
        f"Load average at the end: {', '.join(f'{v:.1f}' for v in result['loadavg_end'])}.",
        "",
        "| kind | in → out | kernel / stride / dilation | input steps | calls | oneDNN (ms) | product (ms) "
        "| Winograd F(4,7) (ms) | F(6,7) (ms) | picked |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def cell(row, key):
        return f"{row[key]:.2f}" if key in row else "–"

    for row in sorted(result["rows"], key=lambda r: -r["onednn_ms"] * r["calls"]):
        lines.append(
            f"| {row['kind']} | {row['in']} → {row['out']} | {row['kernel']} / {row['stride']} / {row['dilation']} "
            f"| {row['input_steps']} | {row['calls']} | {cell(row, 'onednn_ms')} | {cell(row, 'gemm_ms')} "
            f"| {cell(row, 'winograd4_ms')} | {cell(row, 'winograd6_ms')} | {row['picked']} |"
        )
    t = result["ms_per_audio_second"]
    lines += [
        "",
        "Per second of audio (ms of convolution, the calls of this session; a path that does not apply to a "
        "row counts that row's oneDNN time):",
        "",
        "| all oneDNN | all products where they apply | Winograd F(4,7) where it applies | F(6,7) | the rules' pick |",
        "| --- | --- | --- | --- | --- |",
        f"| {t['onednn']:.0f} | {t['gemm']:.0f} | {t['winograd4']:.0f} | {t['winograd6']:.0f} | **{t['picked']:.0f}** |",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--packet", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tag", default="")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    result = run(args)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"cpu_convs{args.tag}.json").write_text(json.dumps(result, indent=1, default=str))
    (out / f"cpu_convs{args.tag}.md").write_text(markdown(result))
    sys.stdout.write(markdown(result))


if __name__ == "__main__":
    main()
