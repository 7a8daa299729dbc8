"""``python -m core doctor [--json]``: exit code 0 only when no check failed."""

from __future__ import annotations

import json
import os
from pathlib import Path


def add_parsers(sub) -> dict:
    """``doctor``, on ``sub``; returns {name: function}."""
    from core.doctor.run import DEFAULT_HOST, DEFAULT_PORT

    p = sub.add_parser(
        "doctor",
        help="diagnose the setup: model, GPU, memory, decode precision, service, decoders, packages, port, folders",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON (keys: docs/doctor.md)")
    p.add_argument("--host", default=None, help=f"where the UI listens [env CODEC_HOST, default {DEFAULT_HOST}]")
    p.add_argument("--port", type=int, default=None, help=f"the UI's port [env CODEC_PORT, default {DEFAULT_PORT}]")
    p.add_argument(
        "--temp-dir",
        type=Path,
        default=None,
        help="the UI's request folders [env CODEC_TEMP_DIR, default: <system temp>/codec-workbench]",
    )
    p.add_argument(
        "--no-model",
        action="store_true",
        help="do not load the model: its files are checked, placement, memory, tones and precision skipped",
    )
    return {"doctor": cmd_doctor}


def options_from_args(args, env=os.environ):
    from core.doctor.run import DEFAULT_HOST, DEFAULT_PORT, DoctorOptions

    changes = {
        "host": args.host or env.get("CODEC_HOST") or DEFAULT_HOST,
        "port": args.port if args.port is not None else int(env.get("CODEC_PORT") or DEFAULT_PORT),
    }
    temp_dir = args.temp_dir or env.get("CODEC_TEMP_DIR")  # as the web UI reads it (webui.options)
    if temp_dir:
        changes["temp_dir"] = Path(temp_dir)
    return DoctorOptions(**changes)


def cmd_doctor(args) -> int:
    from core.doctor.run import run_doctor
    from core.model.engine import Engine
    from core.settings import settings_from_args

    engine = Engine(settings_from_args(args))
    if not args.no_model:
        engine.load()  # a failed load is a finding (placement, memory and tones say why), not an error
    report = run_doctor(engine, options_from_args(args))
    if args.json:
        print(json.dumps({**report.to_dict(), "engine": engine.info()}, indent=2))
    else:
        print(f"model {engine.settings.model} on {engine.info()['device_label']} ({engine.settings.dtype})")
        if engine.error:
            print(f"model not loaded: {engine.error}")
        print(report.to_text())
    return report.exit_code
