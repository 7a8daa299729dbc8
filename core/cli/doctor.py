"""``python -m core doctor [--json]``: exit code 0 only when no check failed.

Where the web UI listens and writes comes from the same table the web UI reads
(``core.settings.ServiceOptions``: ``--host``/``CODEC_HOST``, ``--port``/``CODEC_PORT``,
``--temp-dir``/``CODEC_TEMP_DIR``), so the doctor checks the port and folder the UI would use.
"""

from __future__ import annotations

import json
import os

from core import options


def add_parsers(sub) -> dict:
    """``doctor``, on ``sub``; returns {name: function}."""
    from core.settings import ServiceOptions

    p = sub.add_parser(
        "doctor",
        help="diagnose the setup: model, GPU, memory, decode precision, service, decoders, packages, port, folders",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON (keys: docs/doctor.md)")
    options.add_arguments(p, ServiceOptions)
    p.add_argument(
        "--no-model",
        action="store_true",
        help="do not load the model: its files are checked; placement, memory, tones, precision skipped",
    )
    return {"doctor": cmd_doctor}


def options_from_args(args, env=os.environ):
    from core.doctor.run import DoctorOptions
    from core.settings import ServiceOptions

    service = options.build(ServiceOptions, args, env)
    port = service.port
    if getattr(args, "port", None) is None and not env.get("CODEC_PORT"):  # the port the service is set up with
        from core.doctor.gather import configured_port
        from core.doctor.run import REPO

        port = configured_port(REPO) or port
    return DoctorOptions(host=service.host, port=port, temp_dir=service.temp_root)


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
        print(f"model {engine.settings.model} on {engine.device_label} ({engine.settings.dtype})")
        if engine.error:
            print(f"model not loaded: {engine.error}")
        print(report.to_text())
    return report.exit_code
