"""Command line: ``python -m core {check,encode,decode,roundtrip,ladder,tokenize,evaluate,abx-export,doctor,
build-checkpoint}``.

Exit code 0 on success, 1 with a one-line ``error: ...`` message on bad input or a failed
check, 2 for bad usage (argparse). Tracebacks are only logged with ``--verbose``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from core.errors import CodecError

logger = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    from core.settings import add_settings_arguments

    parser = argparse.ArgumentParser(prog="python -m core", description="Qwen3-TTS-Tokenizer-12Hz codec engine")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details and tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="run the three-step readiness check")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    for name, help_text in (
        ("encode", "audio files -> token files (.npz)"),
        ("decode", "token files (.npz) -> WAV files"),
        ("roundtrip", "audio files -> token files + reconstructed WAVs"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("files", nargs="+", type=Path)
        p.add_argument("-o", "--output-dir", type=Path, required=True, help="where to write results")
    evaluate = sub.add_parser("evaluate", help="round-trip every audio file under a folder: metrics.csv + report.html")
    evaluate.add_argument("directory", type=Path, help="folder of audio files (searched recursively)")
    evaluate.add_argument("-o", "--output-dir", type=Path, required=True, help="new or empty folder for the results")
    evaluate.add_argument("--worst", type=int, default=5, help="files in the report's listening queue")
    export = sub.add_parser("abx-export", help="every stored blind-test answer as one CSV file (for the operator)")
    export.add_argument("-o", "--output", type=Path, required=True, help="a new CSV file")
    lad = sub.add_parser("ladder", help="audio or token file -> one WAV per codebook depth (first k of 16)")
    lad.add_argument("file", type=Path, help="an audio file (encoded first) or a .npz token file")
    lad.add_argument("-o", "--output-dir", type=Path, required=True, help="where to write results")
    lad.add_argument("--levels", default="1,2,4,8,16", help="codebooks kept per level, 1..16 (default 1,2,4,8,16)")
    _add_tokenize_parser(sub)
    from core.doctor.cli import add_parser as add_doctor_parser

    add_doctor_parser(sub)
    for p in sub.choices.values():
        add_settings_arguments(p)

    build = sub.add_parser("build-checkpoint", help="write a random-weight checkpoint (tests, benchmarks)")
    size = build.add_mutually_exclusive_group(required=True)
    size.add_argument("--tiny", action="store_true", help="small dimensions, built in seconds")
    size.add_argument("--full", action="store_true", help="the published architecture (682 MB)")
    build.add_argument("directory", type=Path)
    build.add_argument("--reference", type=Path, default=None, help="reference config.json for --full")
    build.add_argument("--seed", type=int, default=0)
    return parser


def _add_tokenize_parser(sub) -> None:
    p = sub.add_parser(
        "tokenize", help="a dataset (folder, JSONL manifest, Parquet) -> Parquet shards of codes, on Ray"
    )
    p.add_argument("input", type=Path, help="folder of audio (recursive), .jsonl manifest or .parquet table")
    p.add_argument("-o", "--output-dir", type=Path, required=True, help="new folder, or one to resume")
    p.add_argument("--jsonl", action="store_true", help="also write finetune.jsonl (Qwen3-TTS fine-tuning format)")
    p.add_argument("--address", default=None, help="Ray cluster to join [env RAY_ADDRESS]; default: a local Ray")
    p.add_argument("--audio-column", default="audio", help="manifest field / Parquet column with the audio path")
    p.add_argument("--shard-size", type=int, default=256, help="files per Parquet shard (the unit of resume)")
    p.add_argument("--actors", type=int, default=None, help="encode actors (default: one per GPU, or 1 on CPU)")
    p.add_argument("--batch-files", type=int, default=32, help="clips per encode call (bucketed by length)")
    p.add_argument("--num-cpus", type=int, default=None, help="local Ray: CPUs to use (default: all)")
    p.add_argument("--object-store-mb", type=int, default=1024, help="local Ray: object store size, MiB")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")


def cmd_tokenize(args) -> int:
    from core.dataset.job import tokenize
    from core.dataset.pipeline import TokenizeOptions
    from core.dataset.progress import summary_lines
    from core.settings import settings_from_args

    for name in ("shard_size", "batch_files", "object_store_mb"):
        if getattr(args, name) < 1:
            raise CodecError(f"--{name.replace('_', '-')} must be at least 1.")
    options = TokenizeOptions(
        shard_size=args.shard_size,
        address=args.address,
        num_cpus=args.num_cpus,
        object_store_mib=args.object_store_mb,
        actors=args.actors,
        batch_files=args.batch_files,
    )
    manifest = tokenize(
        args.input,
        args.output_dir,
        settings_from_args(args),
        options,
        jsonl=args.jsonl,
        audio_column=args.audio_column,
        show_progress=not args.no_progress,
    )
    for line in summary_lines(manifest):
        print(line)
    print(f"-> {args.output_dir}/manifest.json")
    return 0


def _engine(args):
    from core.model.engine import Engine
    from core.settings import settings_from_args

    engine = Engine(settings_from_args(args))
    if not engine.load():
        raise CodecError(engine.error)
    return engine


def _out_path(directory: Path, source: Path, suffix: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (source.stem + suffix)
    if path.exists():
        raise CodecError(f"{path} already exists; choose another --output-dir or remove it.")
    return path


def _check_outputs(files: list[Path], directory: Path, suffixes: tuple[str, ...]) -> None:
    """Before any work: refuse inputs whose outputs would collide (b/x.wav and c/x.wav both make
    x.npz) or that already exist, so a run never stops half-way with some files written."""
    owners: dict[Path, Path] = {}
    for source in files:
        for suffix in suffixes:
            path = directory / (source.stem + suffix)
            if path in owners:
                raise CodecError(
                    f"{owners[path]} and {source} have the same name: both would write {path}. "
                    "Rename one, or run them with separate --output-dir folders."
                )
            owners[path] = source
            if path.exists():
                raise CodecError(f"{path} already exists; choose another --output-dir or remove it.")


def cmd_check(args) -> int:
    from core.model.engine import Engine
    from core.settings import settings_from_args

    engine = Engine(settings_from_args(args))
    report = engine.warm_up()
    if args.json:
        print(json.dumps({"engine": engine.info(), **report.to_dict()}, indent=2))
    else:
        print(f"model {engine.settings.model} on {engine.info()['device_label']} ({engine.settings.dtype})")
        for i, step in enumerate(report.steps, 1):
            print(f"{i}. {step.title:<18} {step.status.upper():<8} {step.detail} ({step.seconds:.2f} s)")
        print("READY" if report.ok else "NOT READY")
    return 0 if report.ok else 1


def _save_codes(engine, encoded, source: Path, out_dir: Path) -> Path:
    from core.tokens import make_token_file, save_tokens

    token_file = make_token_file(encoded.codes, encoded.original_samples, engine.settings.model)
    return save_tokens(token_file, _out_path(out_dir, source, ".npz"))


def cmd_encode(args) -> int:
    from core.audio.files import load_audio

    _check_outputs(args.files, args.output_dir, (".npz",))
    engine = _engine(args)
    for source in args.files:
        encoded = engine.encode(load_audio(source, engine.settings.audio_limits()))
        path = _save_codes(engine, encoded, source, args.output_dir)
        print(f"{source} -> {path} ({encoded.codes.shape[0]} frames, {encoded.seconds:.2f} s)")
    return 0


def cmd_decode(args) -> int:
    from core.audio.files import write_wav
    from core.tokens import load_tokens

    _check_outputs(args.files, args.output_dir, (".wav",))
    engine = _engine(args)
    for source in args.files:
        token_file = load_tokens(source)
        decoded = engine.decode(token_file.codes, original_samples=token_file.original_samples)
        path = write_wav(_out_path(args.output_dir, source, ".wav"), decoded.samples, decoded.sample_rate)
        print(f"{source} -> {path} ({len(decoded.samples) / decoded.sample_rate:.2f} s audio, {decoded.seconds:.2f} s)")
    return 0


def cmd_roundtrip(args) -> int:
    from core.audio.files import load_audio, write_wav

    _check_outputs(args.files, args.output_dir, (".npz", ".decoded.wav"))
    engine = _engine(args)
    for source in args.files:
        result = engine.roundtrip(load_audio(source, engine.settings.audio_limits()))
        tokens = _save_codes(engine, result.encoded, source, args.output_dir)
        wav = write_wav(_out_path(args.output_dir, source, ".decoded.wav"), result.decoded.samples)
        took = result.encoded.seconds + result.decoded.seconds
        print(f"{source} -> {tokens}, {wav} ({took:.2f} s)")
    return 0


def cmd_ladder(args) -> int:
    """One WAV per level (``<stem>.k04.wav``: the first 4 codebooks) and ``<stem>.ladder.json`` with
    the bitrates, and for audio input SI-SDR and log-mel distance against the input."""
    from tqdm import tqdm

    from core.analysis import metrics as analysis
    from core.nn import ladder
    from core.audio.files import load_audio, write_wav
    from core.codec import check_duration
    from core.tokens import load_tokens

    levels = ladder.parse_levels(args.levels)
    suffixes = tuple(f".k{k:02d}.wav" for k in levels) + (".ladder.json",)
    _check_outputs([args.file], args.output_dir, suffixes)
    engine = _engine(args)
    audio = None
    if args.file.suffix.lower() == ".npz":
        token_file = load_tokens(args.file)
        codes, original_samples = token_file.codes, token_file.original_samples
    else:
        audio = load_audio(args.file, engine.settings.audio_limits()).samples
        codes, original_samples = engine.encode_array(audio).codes, audio.size
    check_duration([codes.shape[0]], engine.settings.max_duration_s)  # a token file is another way in
    rows = []
    for k in tqdm(levels, desc="ladder levels", unit="level", disable=None):
        rung = ladder.decode_ladder(engine, codes, original_samples, [k])[0]
        path = write_wav(_out_path(args.output_dir, args.file, f".k{k:02d}.wav"), rung.samples)
        row = {"codebooks": k, "bitrate_bps": rung.bitrate_bps, "wav": str(path), "decode_s": rung.seconds}
        if audio is not None:
            row |= {m.name: m.value for m in analysis.quick_compare(audio, rung.samples)}
        rows.append(row)
        print(f"k={k:2d} {rung.bitrate_bps:7.1f} bit/s -> {path}")
    report = _out_path(args.output_dir, args.file, ".ladder.json")
    with open(report, "x") as f:
        json.dump({"source": str(args.file), "levels": rows}, f, indent=2)
    print(f"wrote {report}")
    return 0


def cmd_evaluate(args) -> int:
    from core.judging.evaluate import cmd_evaluate as run, find_audio

    find_audio(args.directory)  # a wrong folder fails before the model loads
    return run(args, _engine(args))


def cmd_abx_export(args) -> int:
    from core.judging.abx import AbxStore
    from core.settings import settings_from_args

    path = AbxStore(settings_from_args(args).data_dir).export_csv(args.output)
    print(f"wrote {path}")
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
    if args.tiny:
        path = build_tiny_checkpoint(args.directory, seed=args.seed)
    else:
        path = build_full_checkpoint(args.directory, seed=args.seed, reference=args.reference or REFERENCE_CONFIG)
    print(f"wrote random-weight checkpoint to {path} (not for quality claims)")
    return 0


def cmd_doctor(args) -> int:
    from core.doctor.cli import cmd_doctor as run

    return run(args)


COMMANDS = {
    "check": cmd_check,
    "encode": cmd_encode,
    "decode": cmd_decode,
    "roundtrip": cmd_roundtrip,
    "ladder": cmd_ladder,
    "tokenize": cmd_tokenize,
    "evaluate": cmd_evaluate,
    "abx-export": cmd_abx_export,
    "build-checkpoint": cmd_build_checkpoint,
    "doctor": cmd_doctor,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return COMMANDS[args.command](args)
    except (CodecError, FileExistsError, FileNotFoundError) as e:
        logger.debug("command failed", exc_info=True)
        sys.stderr.write(f"error: {e}\n")
        return 1
