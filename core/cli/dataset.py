"""``python -m core tokenize INPUT -o OUT``: a dataset -> Parquet shards of codes (docs/scaling.md)."""

from __future__ import annotations

from pathlib import Path

from core.errors import CodecError


def add_parsers(sub) -> dict:
    """``tokenize``, on ``sub``; returns {name: function}."""
    p = sub.add_parser(
        "tokenize",
        help="a dataset (folder, JSONL manifest, Parquet, WebDataset .tar shards, datasets folder) -> Parquet "
        "shards of codes, on Ray",
    )
    p.add_argument(
        "input",
        help="folder of audio (recursive), .jsonl manifest, .parquet table(s), .tar shard(s) (a file, a folder, "
        "or a pattern like 'data-{000..099}.tar'), or a datasets folder saved with save_to_disk",
    )
    p.add_argument("-o", "--output-dir", type=Path, required=True, help="new folder, or one to resume")
    p.add_argument("--jsonl", action="store_true", help="also write finetune.jsonl (Qwen3-TTS fine-tuning format)")
    p.add_argument("--address", default=None, help="Ray cluster to join [env RAY_ADDRESS]; default: a local Ray")
    p.add_argument(
        "--audio-column",
        default="audio",
        help="manifest field / table column with the audio (path, bytes or {bytes, path})",
    )
    p.add_argument(
        "--data-root",
        type=Path,
        default=None,
        help="folder every audio path a manifest or table names must lie in (default: the folder of the "
        "manifest, table or input folder; a path outside it is an error row, never read)",
    )
    p.add_argument("--list-skipped", type=Path, default=None, help="write the folder's files that are not audio here")
    p.add_argument("--shard-size", type=int, default=256, help="files per Parquet shard (the unit of resume)")
    p.add_argument("--actors", type=int, default=None, help="encode actors (default: one per GPU, or 1 on CPU)")
    p.add_argument(
        "--batch-files",
        type=int,
        default=None,
        help="clips per encode call, of about one length (default: 128 on a GPU, 16 on a CPU)",
    )
    p.add_argument("--num-cpus", type=int, default=None, help="local Ray: CPUs to use (default: all)")
    p.add_argument(
        "--cpus-per-actor",
        type=float,
        default=None,
        help="CPUs each encode actor reserves (default: 1 on a GPU; on a CPU all but one decode task's)",
    )
    p.add_argument("--object-store-mb", type=int, default=1024, help="local Ray: object store size, MiB")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    p.add_argument(
        "--audit", type=int, default=0, metavar="N", help="after the job, round-trip N sampled clips: a card section"
    )
    return {"tokenize": cmd_tokenize}


def cmd_tokenize(args) -> int:
    from core.dataset.job import tokenize
    from core.dataset.pipeline import TokenizeOptions
    from core.dataset.progress import summary_lines
    from core.settings import settings_from_args

    for name in ("shard_size", "batch_files", "object_store_mb", "num_cpus", "actors"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise CodecError(f"--{name.replace('_', '-')} must be at least 1.")
    options = TokenizeOptions(
        shard_size=args.shard_size,
        address=args.address,
        num_cpus=args.num_cpus,
        object_store_mib=args.object_store_mb,
        actors=args.actors,
        batch_files=args.batch_files,
        cpus_per_actor=args.cpus_per_actor,
    )
    manifest = tokenize(
        args.input,
        args.output_dir,
        settings_from_args(args),
        options,
        jsonl=args.jsonl,
        audio_column=args.audio_column,
        data_root=args.data_root,
        show_progress=not args.no_progress,
        list_skipped=args.list_skipped,
    )
    for line in summary_lines(manifest):
        print(line)
    print(f"-> {args.output_dir}/manifest.json")
    if args.audit > 0:  # core.dataset.audit: reads the input again; changes nothing that was tokenized
        from core.dataset.audit import AUDIT_FILE, run_audit

        run_audit(args.input, args.output_dir, settings_from_args(args), args.audit, args.audio_column)
        print(f"-> {args.output_dir}/{AUDIT_FILE} (and the card's audit section)")
    return 0
