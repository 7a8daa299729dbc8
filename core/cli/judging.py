"""The judging commands: ``evaluate`` (a folder round-tripped and judged), ``abx-export`` (the blind
tests' answers) and ``listening-export`` (the shared listening tests' ratings and answers)."""

from __future__ import annotations

from pathlib import Path

from core.cli.common import engine_from_args


def add_parsers(sub) -> dict:
    """The judging commands, on ``sub``; returns {name: function}."""
    evaluate = sub.add_parser("evaluate", help="round-trip every audio file under a folder: metrics.csv + report.html")
    evaluate.add_argument("directory", type=Path, help="folder of audio files (searched recursively)")
    evaluate.add_argument("-o", "--output-dir", type=Path, required=True, help="new or empty folder for the results")
    evaluate.add_argument("--worst", type=int, default=5, help="files in the report's listening queue")
    evaluate.add_argument(
        "--table", action="store_true", help="also the Qwen3-TTS README's tokenizer table for this folder (table.md)"
    )
    export = sub.add_parser("abx-export", help="every stored blind-test answer as one CSV file (for the operator)")
    export.add_argument("-o", "--output", type=Path, required=True, help="a new CSV file")
    shared = sub.add_parser(
        "listening-export",
        help="every rating and answer of the shared listening tests (MUSHRA, ABX) as one CSV file, by id",
    )
    shared.add_argument("-o", "--output", type=Path, required=True, help="a new CSV file")
    return {"evaluate": cmd_evaluate, "abx-export": cmd_abx_export, "listening-export": cmd_listening_export}


def cmd_evaluate(args) -> int:
    from core.judging.evaluate import check_output_dir
    from core.judging.evaluate import cmd_evaluate as run
    from core.judging.folder_files import find_audio

    check_output_dir(args.directory, args.output_dir)  # a wrong folder fails before the model loads
    find_audio(args.directory)
    return run(args, engine_from_args(args))


def cmd_abx_export(args) -> int:
    from core.listening.abx_store import AbxStore
    from core.settings import settings_from_args

    path = AbxStore(settings_from_args(args).data_dir).export_csv(args.output)
    print(f"wrote {path}")
    return 0


LISTENING_FIELDS = (
    "test", "kind", "listener", "nickname", "item", "condition", "rating", "trial", "x_is", "answer", "correct", "at",
    "flag",  # core.listening.shared_test_fetches: "" or why the answer could not come from listening
)  # fmt: skip


def cmd_listening_export(args) -> int:
    from core import csv_cells
    from core.listening.shared_test_store import store_for
    from core.settings import settings_from_args

    rows = store_for(settings_from_args(args)).export_rows()
    with open(args.output, "x", newline="", encoding="utf-8") as f:
        writer = csv_cells.dict_writer(f, fieldnames=LISTENING_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.output} ({len(rows)} rows)")
    return 0
