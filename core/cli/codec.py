"""The codec's commands: ``check``, ``encode``, ``decode``, ``roundtrip``, ``ladder``, ``build-checkpoint``."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

from core.analysis.judges import Judges
from core.cli.common import check_outputs, engine_from_args, out_path
from core.codec import SAMPLE_RATE
from core.errors import CodecError


def add_parsers(sub) -> dict:
    """The codec's commands, on ``sub``; returns {name: function}."""
    check = sub.add_parser("check", help="run the three-step readiness check")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    for name, help_text in (
        ("encode", "audio files -> token files (.npz)"),
        ("decode", "token files (.npz) -> WAV files"),
        ("roundtrip", "audio files -> token files + reconstructed WAVs"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("files", nargs="+", type=Path, help="audio files" if name != "decode" else "token files (.npz)")
        p.add_argument("-o", "--output-dir", type=Path, required=True, help="where to write results")
    sub.choices["roundtrip"].add_argument(
        "--no-mos", action="store_true", help="leave DistillMOS out of the metrics table (faster)"
    )
    lad = sub.add_parser("ladder", help="audio or token file -> one WAV per codebook depth (first k of 16)")
    lad.add_argument("file", type=Path, help="an audio file (encoded first) or a .npz token file")
    lad.add_argument("-o", "--output-dir", type=Path, required=True, help="where to write results")
    lad.add_argument("--levels", default="1,2,4,8,16", help="codebooks kept per level, 1..16 (default 1,2,4,8,16)")
    return {
        "check": cmd_check,
        "encode": cmd_encode,
        "decode": cmd_decode,
        "roundtrip": cmd_roundtrip,
        "ladder": cmd_ladder,
    }


def add_build_checkpoint_parser(sub) -> dict:
    """``build-checkpoint`` takes no model settings (it makes one)."""
    build = sub.add_parser("build-checkpoint", help="write a random-weight checkpoint (tests, benchmarks)")
    size = build.add_mutually_exclusive_group(required=True)
    size.add_argument("--tiny", action="store_true", help="small dimensions, built in seconds")
    size.add_argument("--full", action="store_true", help="the published architecture (682 MB)")
    build.add_argument("directory", type=Path)
    build.add_argument("--reference", type=Path, default=None, help="reference config.json for --full")
    build.add_argument("--seed", type=int, default=0)
    build.add_argument(
        "--layer-scale",
        type=float,
        default=None,
        help="--full: set every transformer layer scale (1.0 for exactness checks: context then matters)",
    )
    build.add_argument(
        "--output-rate",
        type=int,
        default=SAMPLE_RATE,
        metavar="HZ",
        help="the decoder's output rate: 24000 (published) or 48000 (the community recipe: one more x2 block)",
    )
    return {"build-checkpoint": cmd_build_checkpoint}


def cmd_check(args) -> int:
    from core.model.engine import Engine
    from core.settings import settings_from_args

    engine = Engine(settings_from_args(args))
    report = engine.warm_up()
    if args.json:
        print(json.dumps({"engine": engine.info(), **report.to_dict()}, indent=2))
    else:
        print(f"model {engine.settings.model} on {engine.device_label} ({engine.settings.dtype})")
        for i, step in enumerate(report.steps, 1):
            print(f"{i}. {step.title:<18} {step.status.upper():<8} {step.detail} ({step.seconds:.2f} s)")
        print("READY" if report.ok else "NOT READY")
    return 0 if report.ok else 1


def _save_codes(engine, encoded, source: Path, out_dir: Path, suffix: str = ".npz") -> Path:
    from core.tokens import make_token_file, save_tokens

    rate = engine.output_rate
    token_file = make_token_file(encoded.codes, encoded.original_samples, engine.settings.model, decoder_rate_hz=rate)
    return save_tokens(token_file, out_path(out_dir, source, suffix))


def cmd_encode(args) -> int:
    from core.audio.files import load_audio

    check_outputs(args.files, args.output_dir, (".npz",))
    engine = engine_from_args(args)
    for source in args.files:
        encoded = engine.encode(load_audio(source, engine.settings.audio_limits()))
        path = _save_codes(engine, encoded, source, args.output_dir)
        print(f"{source} -> {path} ({encoded.codes.shape[0]} frames, {encoded.seconds:.2f} s)")
    return 0


def cmd_decode(args) -> int:
    from core.audio.files import write_wav
    from core.model.family import decoder_note
    from core.tokens import load_tokens

    check_outputs(args.files, args.output_dir, (".wav",))
    engine = engine_from_args(args)
    for source in args.files:
        token_file = load_tokens(source, max_duration_s=engine.settings.max_duration_s)
        note = decoder_note(token_file.decoder_rate_hz, engine.output_rate)
        if note:
            print(f"{source}: {note}", file=sys.stderr)
        decoded = engine.decode(token_file.codes, original_samples=token_file.original_samples)
        path = write_wav(out_path(args.output_dir, source, ".wav"), decoded.samples, decoded.sample_rate)
        print(f"{source} -> {path} ({len(decoded.samples) / decoded.sample_rate:.2f} s audio, {decoded.seconds:.2f} s)")
    return 0


def cmd_roundtrip(args) -> int:
    """Per file: the codes (``<stem>.npz``), the codec's reconstruction (``<stem>.decoded.wav``), each
    other source (``<stem>.<id>.wav``: the --anchors, ``compare`` for --compare-model, with its codes
    in ``<stem>.compare.npz``) and ``<stem>.metrics.csv``: one column per source (printed too)."""
    from tqdm import tqdm

    from core import csv_cells
    from core.anchors import parse_anchors
    from core.audio.files import load_audio
    from core.judging import placing, source_table, sources
    from core.settings import settings_from_args

    settings = settings_from_args(args)
    anchors = parse_anchors(settings.anchors)
    extra = [f".{a.id}.wav" for a in anchors] + ([".compare.wav", ".compare.npz"] if settings.compare_model else [])
    check_outputs(args.files, args.output_dir, (".npz", ".decoded.wav", *extra, ".metrics.csv"))
    engine = engine_from_args(args)
    for source in tqdm(args.files, desc="round trips", unit="file", disable=None):
        made = sources.make_sources(engine, load_audio(source, sources.audio_limits_for(engine)), anchors)
        tokens = _save_codes(engine, made.trip.encoded, source, args.output_dir)
        written = sources.write_sources(made.sources, partial(_source_path, args.output_dir, source))
        wav = written[sources.CODEC_ID]
        if made.second_trip is not None:
            _save_codes(engine.compare, made.second_trip.encoded, source, args.output_dir, ".compare.npz")
        for problem in made.problems:
            print(f"{source}: {problem.message}", file=sys.stderr)
        judges = Judges.of(engine.settings)
        table = source_table.measure(made.original, made.sources, engine.device, mos=not args.no_mos, judges=judges)
        with open(out_path(args.output_dir, source, ".metrics.csv"), "x", newline="") as f:
            csv_cells.writer(f).writerows(table.csv_rows())
        print(f"{source} -> {tokens}, {wav} and {len(made.sources) - 1} other sources ({made.timing['model_s']:.2f} s)")
        print(table.text())
        if made.rate_hz != SAMPLE_RATE:
            print(_rates_line(made, engine))
        if made.agreement:
            shares = " ".join(f"{v:.0%}" for v in made.agreement)
            print(f"codes equal to the second checkpoint's, per codebook: {shares}")
        print(placing.place(table, random_weights=engine.random_weights).sentence)
    return 0


def _rates_line(made, engine) -> str:
    """What was compared at which rate, when a decoder writes above 24 kHz."""
    made_at = ", ".join(f"{s.id} {s.made_at_hz / 1000:g} kHz" for s in made.sources if s.made_at_hz != SAMPLE_RATE)
    band = made.band
    above = (
        f"the original holds up to {band.original_top_hz / 1000:g} kHz"
        if band.above_24k_input
        else "the original holds nothing above 12 kHz, so nothing above 12 kHz can be compared"
    )
    return f"compared at {band.rate_hz / 1000:g} kHz ({made_at}; the others resampled); {above}"


def _source_path(output_dir, source, made) -> Path:
    """A round trip's source beside its input: ``.decoded.wav`` (the codec's), ``.<id>.wav`` (the others)."""
    from core.judging.sources import CODEC_ID

    return out_path(output_dir, source, ".decoded.wav" if made.id == CODEC_ID else f".{made.id}.wav")


def cmd_ladder(args) -> int:
    """One WAV per level (``<stem>.k04.wav``: the first 4 codebooks) and ``<stem>.ladder.json`` with
    the bitrates, and for audio input SI-SDR and log-mel distance against the input."""
    from tqdm import tqdm

    from core.analysis import metrics
    from core.audio import rates
    from core.audio.files import load_audio, write_wav
    from core.codec import check_duration
    from core.nn import ladder
    from core.tokens import load_tokens

    levels = ladder.parse_levels(args.levels)
    suffixes = tuple(f".k{k:02d}.wav" for k in levels) + (".ladder.json",)
    check_outputs([args.file], args.output_dir, suffixes)
    engine = engine_from_args(args)
    audio, rate = None, engine.output_rate  # levels at the decoder's rate, compared with the input at it
    if args.file.suffix.lower() == ".npz":
        token_file = load_tokens(args.file, max_duration_s=engine.settings.max_duration_s)
        codes, original_samples = token_file.codes, token_file.original_samples
    else:
        read = load_audio(args.file, rates.limits_keeping(engine.settings.audio_limits(), rate))
        codes, original_samples = engine.encode_array(read.samples).codes, read.samples.size
        audio = rates.original_at(read, rate)[0]  # the file's own samples above 24 kHz
    check_duration([codes.shape[0]], engine.settings.max_duration_s)  # a token file is another way in
    ladder.check_budget(levels, original_samples / SAMPLE_RATE, engine.settings.ladder_max_audio_s)  # input samples
    rows = []
    for k in tqdm(levels, desc="ladder levels", unit="level", disable=None):
        rung = ladder.decode_ladder(engine, codes, original_samples, [k])[0]
        path = write_wav(out_path(args.output_dir, args.file, f".k{k:02d}.wav"), rung.samples, rate)
        row = {"codebooks": k, "bitrate_bps": rung.bitrate_bps, "wav": str(path), "decode_s": rung.seconds}
        row["output_rate_hz"] = rate
        if audio is not None:
            row |= {m.name: m.value for m in metrics.quick_compare(audio, rung.samples, sample_rate=rate)}
        rows.append(row)
        print(f"k={k:2d} {rung.bitrate_bps:7.1f} bit/s -> {path}")
    report = out_path(args.output_dir, args.file, ".ladder.json")
    with open(report, "x") as f:
        json.dump({"source": str(args.file), "levels": rows}, f, indent=2)
    print(f"wrote {report}")
    return 0


def cmd_build_checkpoint(args) -> int:
    from core.model.checkpoints import (
        REFERENCE_CONFIG,
        build_full_checkpoint,
        build_tiny_checkpoint,
    )

    if args.directory.exists() and not args.directory.is_dir():
        raise CodecError(f"{args.directory} is a file, not a directory; choose a new directory.")
    if args.directory.exists() and any(args.directory.iterdir()):
        raise CodecError(f"{args.directory} is not empty; choose a new directory.")
    from core.model.checkpoints import tiny_config
    from core.model.family import decoder_config_for_rate

    try:
        decoder_config_for_rate(tiny_config(), args.output_rate)  # refuse a rate before writing anything
    except ValueError as e:
        raise CodecError(f"--output-rate: {e}.") from e
    if args.tiny:
        path = build_tiny_checkpoint(args.directory, seed=args.seed, output_rate_hz=args.output_rate)
    else:
        path = build_full_checkpoint(
            args.directory,
            seed=args.seed,
            reference=args.reference or REFERENCE_CONFIG,
            layer_scale=args.layer_scale,
            output_rate_hz=args.output_rate,
        )
    print(f"wrote random-weight checkpoint to {path} ({args.output_rate} Hz out; not for quality claims)")
    return 0
