"""Command line: ``python -m core {check,encode,decode,roundtrip,ladder,tokenize,evaluate,abx-export,listening-export,
doctor,build-checkpoint,live,parity,encode-parity,precision,serve-decode,stream-parity,finetune}``. One module per area
(``codec``, ``judging``, ``dataset``, ``doctor``, ``live``, ``parity``, ``stream``, ``training``), each with
``add_parsers(sub) -> {name: function}``; this module assembles them.

Exit code 0 on success, 1 with a one-line ``error: ...`` message on bad input or a failed
check, 2 for bad usage (argparse). Tracebacks are only logged with ``--verbose``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from core.errors import CodecError

logger = logging.getLogger(__name__)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Callable]]:
    """The parser and {command name: function}."""
    from core.cli import codec, dataset, doctor, judging, live, parity, stream, training
    from core.settings import add_settings_arguments

    parser = argparse.ArgumentParser(prog="python -m core", description="Qwen3-TTS-Tokenizer-12Hz codec engine")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details and tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    commands: dict[str, Callable] = {}
    for module in (codec, judging, dataset, doctor, live, parity, stream, training):
        commands |= module.add_parsers(sub)
    for p in sub.choices.values():
        p.usage = _short_usage(p)
        add_settings_arguments(p)
    commands |= codec.add_build_checkpoint_parser(sub)
    return parser, commands


def _short_usage(parser: argparse.ArgumentParser) -> str:
    """The command's own usage with the engine's flags as one ``[engine options]``: the ≈40 flags every
    command shares would bury its own two or three (``--help`` lists them, after the command's)."""
    own = parser.format_usage().removeprefix("usage: ").rstrip()
    return f"{own} [engine options]"


def main(argv: list[str] | None = None) -> int:
    parser, commands = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return commands[args.command](args)
    except (CodecError, FileExistsError, FileNotFoundError) as e:
        logger.debug("command failed", exc_info=True)
        sys.stderr.write(f"error: {e}\n")
        return 1
