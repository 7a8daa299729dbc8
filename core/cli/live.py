"""``python -m core live IN.wav -o OUT/ --block-ms 80 [--realtime]``: a file through a live session.

The file is read block by block at its own rate and channel count and pushed through the engine's
live session (``core.model.live``: the streaming input, encoder and decoder the Live tab uses), in
real time with ``--realtime`` (one block per block duration, as a microphone delivers) or as fast as
the model goes. Writes ``<stem>.npz`` (the codes, equal to ``python -m core encode IN.wav``),
``<stem>.live.wav`` (the streamed audio) and ``<stem>.latency.json`` (compute per block, wait for
the lock, the codec's algorithmic latency, the real-time factor).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from core.cli.common import check_outputs, engine_from_args, out_path
from core.codec import FRAME_RATE, SAMPLE_RATE
from core.errors import AudioInputError, CodecError
from core.units import minutes

SUFFIXES = (".npz", ".live.wav", ".latency.json")
ALGORITHMIC_MS = 1000.0 / FRAME_RATE  # one frame: a frame's codes need its last sample; no lookahead


def add_parsers(sub) -> dict:
    live = sub.add_parser("live", help="stream an audio file through a live session (codes, audio, latency)")
    live.add_argument("file", type=Path, help="an audio file soundfile reads (WAV, FLAC, OGG)")
    live.add_argument("-o", "--output-dir", type=Path, required=True, help="where to write results")
    live.add_argument("--block-ms", type=float, default=80.0, help="block length pushed at a time, ms (default 80)")
    live.add_argument("--realtime", action="store_true", help="push one block per block duration, like a microphone")
    return {"live": cmd_live}


def cmd_live(args) -> int:
    import soundfile as sf
    from tqdm import tqdm

    from core.audio.files import write_wav
    from core.tokens import make_token_file, save_tokens

    if not 1.0 <= args.block_ms <= 10_000.0:
        raise CodecError(f"--block-ms must be between 1 and 10000 ms, not {args.block_ms:g}.")
    check_outputs([args.file], args.output_dir, SUFFIXES)
    try:
        f = sf.SoundFile(args.file)
    except (sf.SoundFileError, RuntimeError) as e:
        raise AudioInputError(f"'{args.file.name}' cannot be read as WAV, FLAC or OGG ({e}); convert it first.") from e
    engine = engine_from_args(args)
    with f:
        limit_s = engine.live.max_seconds()
        if f.frames / f.samplerate > limit_s:
            raise AudioInputError(
                f"'{args.file.name}' is {minutes(f.frames / f.samplerate)} long, over the live limit of "
                f"{minutes(limit_s)} (--live-max-s, --max-duration); cut it or raise the limit."
            )
        block = max(1, round(f.samplerate * args.block_ms / 1000))
        rows = []
        with engine.live.open(f.samplerate, f.channels, paced=False, name=args.file.name) as session:
            start = time.perf_counter()
            bar = tqdm(total=f.frames, unit="sample", unit_scale=True, desc="live", disable=None)
            for index, samples in enumerate(f.blocks(blocksize=block, dtype="float32", always_2d=True)):
                if args.realtime:  # a microphone delivers block k at (k + 1) block durations
                    time.sleep(max(0.0, start + (index + 1) * block / f.samplerate - time.perf_counter()))
                step = session.push(samples)
                rows.append({"frames": int(step.codes.shape[0]), "compute_ms": step.compute_s * 1000})
                bar.update(samples.shape[0])
            bar.close()
            result = session.finish()
    token_file = make_token_file(
        result.codes, result.recording.samples.size, engine.settings.model, decoder_rate_hz=engine.output_rate
    )
    tokens = save_tokens(token_file, out_path(args.output_dir, args.file, ".npz"))
    wav = write_wav(out_path(args.output_dir, args.file, ".live.wav"), result.reconstruction)
    report = latency_report(rows, result.stats, args.block_ms, bool(args.realtime), engine.info())
    path = out_path(args.output_dir, args.file, ".latency.json")
    path.write_text(json.dumps(report, indent=2))
    print(
        f"{args.file} -> {tokens}, {wav}, {path}: {result.codes.shape[0]} frames; compute per "
        f"{args.block_ms:g} ms block median {report['compute_ms_per_block']['median']:.1f} ms, "
        f"real-time factor {report['realtime_factor']:.2f}"
    )
    return 0


def latency_report(rows: list[dict], stats: dict, block_ms: float, realtime: bool, info: dict) -> dict:
    """The parts of the latency a listener hears, per block, from the session's measurements."""
    compute = np.array([r["compute_ms"] for r in rows] or [0.0])
    with_frames = np.array([r["compute_ms"] for r in rows if r["frames"]] or [0.0])
    return {
        "block_ms": block_ms,
        "realtime": realtime,
        "blocks": len(rows),
        "audio_s": stats["seconds"],
        "device": info["device_label"],
        "algorithmic_ms": ALGORITHMIC_MS,  # a frame is encoded once its last sample is in; the encoder has no lookahead
        "block_wait_ms": block_ms,  # a block's first sample waits for its last before it is sent
        "compute_ms_per_block": _spread(compute),
        "compute_ms_per_block_with_frames": _spread(with_frames),
        "compute_ms_per_frame": {"median": stats["compute_ms_median"], "p95": stats["compute_ms_p95"]},
        "realtime_factor": stats["realtime_factor"],  # model seconds per audio second (< 1 keeps up)
        "sample_rate": SAMPLE_RATE,
    }


def _spread(values: np.ndarray) -> dict:
    return {
        "median": float(np.median(values)),
        "p95": float(np.percentile(values, 95)),
        "max": float(values.max()),
    }
