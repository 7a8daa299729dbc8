"""Stream decoding from the command line.

- ``python -m core serve-decode --port N [--host H]``: ``/decode/ws`` and ``/health`` without the page
  (``core.serving.decode_server``), until interrupted.
"""

from __future__ import annotations

import logging
import signal
import sys

from core.cli.common import engine_from_args
from core.errors import CodecError

logger = logging.getLogger(__name__)


def add_parsers(sub) -> dict:
    from core.settings import DEFAULT_HOST

    serve = sub.add_parser(
        "serve-decode", help="serve /decode/ws (codes in, PCM out) for a TTS server, without the page"
    )
    serve.add_argument("--port", type=int, required=True, help="TCP port to listen on")
    serve.add_argument(
        "--host", default=DEFAULT_HOST, help=f"interface to bind (default {DEFAULT_HOST}; no login here)"
    )
    return {"serve-decode": cmd_serve_decode}


def cmd_serve_decode(args) -> int:
    from core.serving.decode_server import make_server

    if not 0 < args.port < 65536:
        raise CodecError(f"--port must be 1 to 65535, not {args.port}.")
    engine = engine_from_args(args)
    server = make_server(engine, args.host, args.port)
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    sys.stderr.write(f"serving ws://{args.host}:{args.port}/decode/ws ({engine.device_label}); Ctrl-C stops\n")
    server.run()
    if not server.started:
        raise CodecError(f"cannot serve on {args.host}:{args.port}; choose another --port or stop what uses it.")
    return 0
