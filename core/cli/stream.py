"""Stream decoding from the command line.

- ``python -m core serve-decode --port N [--host H]``: ``/decode/ws`` and ``/health`` without the page
  (``core.serving.decode_server``), until interrupted.
- ``python -m core stream-parity CODES THEIR.wav --packet-frames N [--json]``: someone else's streamed
  decode against the whole decode (``core.parity.stream_check``); exit 1 when it failed.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path

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
    check = sub.add_parser(
        "stream-parity", help="another server's streamed decode against the whole decode of the codes"
    )
    check.add_argument("codes", type=Path, help="the codes it streamed: a token file (.npz), .npy or JSON, frames × 16")
    check.add_argument("wav", type=Path, help="the audio it streamed, joined into one WAV")
    check.add_argument("--packet-frames", type=int, default=4, help="frames per packet it decoded (default 4)")
    check.add_argument("--json", action="store_true", help="print every measurement as JSON")
    return {"serve-decode": cmd_serve_decode, "stream-parity": cmd_stream_parity}


def cmd_serve_decode(args) -> int:
    from core.serving.decode_server import make_server

    if not 0 < args.port < 65536:
        raise CodecError(f"--port must be 1 to 65535, not {args.port}.")
    _check_port_free(args.host, args.port)  # before the model loads
    engine = engine_from_args(args)
    engine.streams.warm()  # the first client's first packet is not the process's (GPU: graphs captured now)
    server = make_server(engine, args.host, args.port)
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    sys.stderr.write(f"serving ws://{args.host}:{args.port}/decode/ws ({engine.device_label}); Ctrl-C stops\n")
    try:
        server.run()
    except SystemExit:  # uvicorn exits when it cannot bind (taken since the check)
        pass
    if not server.started:
        raise CodecError(f"cannot serve on {args.host}:{args.port}; choose another --port or stop what uses it.")
    return 0


def _check_port_free(host: str, port: int) -> None:
    import socket

    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as e:
        raise CodecError(
            f"cannot serve on {host}:{port} ({e.strerror or e}); choose another --port or stop what uses it."
        ) from None


def cmd_stream_parity(args) -> int:
    from core.parity.inputs import load_codes, load_their_wav
    from core.parity.stream_check import check_stream
    from core.settings import settings_from_args

    if not 1 <= args.packet_frames <= 10_000:
        raise CodecError(f"--packet-frames must be 1 or more frames, not {args.packet_frames}.")
    limits = settings_from_args(args).audio_limits()
    codes = load_codes(args.codes, limits.max_duration_s)
    their = load_their_wav(args.wav, limits, codes)  # bad input: before the model loads
    result = check_stream(engine_from_args(args), codes.codes, their.samples, args.packet_frames)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(f"{result.verdict}: {result.sentence}")
        for gap in result.gaps[:10]:
            print(f"  gap at {gap.time_s:.3f} s: {gap.ms:.0f} ms of inserted silence")
        for seam in result.worst_seams[:5]:
            clicks = f", {seam.clicks} click(s)" if seam.clicks else ""
            print(f"  seam before packet {seam.packet + 1} at {seam.time_s:.3f} s: {seam.max_lsb:.1f} LSB{clicks}")
        print(f"  length: {result.their_samples} samples against {result.our_samples} (drift {result.drift_samples})")
        for context, snr in result.windowed_snr_db.items():
            said = "identical" if snr is None else f"{snr:.1f} dB"
            print(f"  against re-decoding each packet with {context} frames of context: {said}")
    return 0 if result.verdict == "ok" else 1
