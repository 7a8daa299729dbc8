"""The parity commands: ``parity`` (another implementation's WAV against the reference decode of the same
codes), ``encode-parity`` (another encoder's codes against the reference encode) and ``precision`` (one
clip through fp32, bf16 and fp16 on this device). docs/parity.md."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from core.cli.common import engine_from_args
from core.errors import CodecError
from core.parity.words import where

logger = logging.getLogger(__name__)

PARITY_EXAMPLES = """examples:
  python -m core parity clip.npz their_decode.wav
      the model is the one the token file names (its model_source); --model overrides it
  python -m core parity codes.npy their_decode.wav --model ./Qwen3-TTS-Tokenizer-12Hz --report parity.html
      codes without a model name (.npy, JSON frames x 16) take --model or CODEC_MODEL

exit code 0 whatever the verdict (it is printed); 1 when an input cannot be read. docs/parity.md"""


def add_parsers(sub) -> dict:
    """The parity commands, on ``sub``; returns {name: function}."""
    parity = sub.add_parser(
        "parity",
        help="another decoder's WAV against the reference decode of the same codes",
        description="Decode CODES with the reference model and compare WAV (another implementation's decode of "
        "the same codes) with it: offset, length, error curve, clicks at seams and a verdict naming the likely cause.",
        epilog=PARITY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parity.add_argument("codes", type=Path, help="the codes it decoded: a token file (.npz), .npy or JSON, frames × 16")
    parity.add_argument("wav", type=Path, help="the WAV it made from them")
    parity.add_argument(
        "--report", type=Path, default=None, help="write an HTML report (a new file) with the error curve"
    )
    parity.add_argument("--json", action="store_true", help="print every measurement as JSON")
    enc = sub.add_parser("encode-parity", help="another encoder's codes against the reference encode of the same audio")
    enc.add_argument("audio", type=Path, help="the audio it encoded")
    enc.add_argument("codes", type=Path, help="its codes: a token file (.npz), .npy or JSON, frames × 16")
    enc.add_argument("--json", action="store_true", help="print every measurement as JSON")
    prec = sub.add_parser("precision", help="one clip through encode and decode in fp32, bf16 and fp16 on this device")
    prec.add_argument("clip", type=Path, help="an audio file (its first 60 s are used)")
    prec.add_argument(
        "--precisions",
        default="",
        help="comma-separated from float32, tf32, bfloat16, float16 (default: all for the device)",
    )
    prec.add_argument("--json", action="store_true", help="print every measurement as JSON")
    return {"parity": cmd_parity, "encode-parity": cmd_encode_parity, "precision": cmd_precision}


def _progress(description: str):
    from tqdm import tqdm

    bar = tqdm(total=100, desc=description, unit="%", disable=None)

    def update(fraction: float) -> None:
        bar.update(max(0, round(fraction * 100) - bar.n))

    return bar, update


def cmd_parity(args) -> int:
    from core.parity import decode_parity, report
    from core.parity.inputs import load_codes, load_their_wav
    from core.settings import settings_from_args

    for path in (args.report, args.report.with_suffix(".png")) if args.report is not None else ():
        if path.exists():
            raise CodecError(f"{path} already exists; choose another --report path or remove it.")
    limits = settings_from_args(args).audio_limits()
    codes = load_codes(args.codes, limits.max_duration_s)
    load_their_wav(args.wav, limits, codes)  # bad input: before the model loads
    if args.model is None and not os.environ.get("CODEC_MODEL") and codes.model_source:
        args.model = codes.model_source  # the model that made the codes decodes them
        sys.stderr.write(f"model: {codes.model_source} (named by {args.codes.name}; --model chooses another)\n")
    engine = engine_from_args(args)
    bar, update = _progress("reference decode")
    try:
        result = decode_parity.check_decode(engine, args.codes, args.wav, update)
    finally:
        bar.close()
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        png = args.report.with_suffix(".png")
        report.curve_png(result, png)
        random_weights = engine.random_weights
        with open(args.report, "x", encoding="utf-8") as f:
            f.write(report.html_page(result, png, random_weights=random_weights))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    assert result.verdict is not None
    print(result.verdict.headline.english())
    for note in result.verdict.evidence:
        print(f"  - {note.english()}")
    for click in result.clicks[:10]:
        print(f"  click at {click.time_s:.3f} s: {click.height_lsb:.0f} LSB ({where(click.seam)})")
    if args.report is not None:
        print(f"wrote {args.report}")
    return 0


def cmd_encode_parity(args) -> int:
    from core.parity import encode_parity

    result = encode_parity.check_encode(engine_from_args(args), args.audio, args.codes)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    for note in result.notes:
        print(note.english())
    print("agreement per codebook: " + " ".join(f"{a:.3f}" for a in result.agreement))
    return 0


def cmd_precision(args) -> int:
    from core.audio.files import load_audio
    from core.parity import precision

    engine = engine_from_args(args)
    audio = load_audio(args.clip, engine.settings.audio_limits())
    wanted = tuple(p.strip() for p in args.precisions.split(",") if p.strip()) or None
    bar, update = _progress("precisions")
    try:
        sweep = precision.sweep(engine, audio.samples, wanted, update)
    finally:
        bar.close()
    if args.json:
        print(json.dumps(sweep.to_dict(), indent=2))
        return 0
    print(f"{sweep.device_name} ({sweep.device}), {sweep.clip_s:.1f} s clip")
    print(f"{'precision':<12} {'encode s':>9} {'decode s':>9} {'codes = fp32':>13} {'SNR dB':>8}  broken chunks")
    for r in sweep.rows:
        if r.error:
            print(f"{r.label:<12} not available: {r.error}")
            continue
        snr = "inf" if r.snr_db == float("inf") else "n/a" if r.snr_db is None else f"{r.snr_db:.1f}"
        print(
            f"{r.label:<12} {r.encode_s:>9.3f} {r.decode_s:>9.3f} {r.codes_equal:>12.1%} {snr:>8}  {len(r.broken)} of {r.chunks}"
        )
    for note in sweep.recommendation:
        print(f"- {note.english()}")
    return 0
