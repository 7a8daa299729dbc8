"""``python -m webui`` / ``codec-workbench``: load the model, check it, then serve the UI.

Startup stages are logged with their times; the model is loaded and checked (a test
round trip) *before* the server accepts requests. A failed load does not stop the server:
the page then says what is wrong and how to provide the weights. The process stays in the
foreground and exits cleanly on SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from core import options
from core.errors import SettingsError
from core.settings import add_settings_arguments, settings_from_args
from core.units import MIB
from webui.options import UiOptions, WebOptions
from webui.serving import share_link, storage, url_input
from webui.serving.throttle import trusted_set

if TYPE_CHECKING:  # gradio, torch and the app are imported in main(), once the flags and the port are checked
    from webui.server import ServerOptions

logger = logging.getLogger("webui")

AUTH_USER_ENV = "CODEC_AUTH_USER"  # user name for the UI login (optional)
AUTH_PASSWORD_ENV = "CODEC_AUTH_PASSWORD"  # its password (both or neither)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class StartupError(Exception):
    """A setting that stops the server from starting; the message says what to change."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codec-workbench", description="Codec Workbench web UI")
    add_settings_arguments(parser)
    service = parser.add_argument_group(
        "service",
        "where the web service listens and writes, its limits per client",  # i18n-exempt: CLI help
    )
    options.add_arguments(service, WebOptions)
    return parser


def auth_from_env(env) -> tuple[str, str] | None:
    user, password = env.get(AUTH_USER_ENV, ""), env.get(AUTH_PASSWORD_ENV, "")
    if bool(user) != bool(password):
        raise StartupError(f"Set both {AUTH_USER_ENV} and {AUTH_PASSWORD_ENV} to require a login, or neither.")
    return (user, password) if user else None


def options_from_args(args, env) -> tuple[UiOptions, ServerOptions]:
    """What the app and the server need, from flags and the environment."""
    return split_options(options.build(WebOptions, args, env), env)


def split_options(web: WebOptions, env) -> tuple[UiOptions, ServerOptions]:
    from webui.server import ServerOptions  # imports gradio

    policy = url_input.UrlPolicy(int(web.url_max_mb * MIB), web.url_timeout_s) if web.enable_url_input else None
    ui = UiOptions(
        temp_root=web.temp_root,
        max_age_s=web.keep_files_s,
        max_temp_bytes=int(web.max_temp_mb * MIB),
        url_policy=policy,
        compare_models_dir=Path(web.compare_models_dir) if web.compare_models_dir else None,
        second_for_visitors=web.second_for_visitors,
        trusted_proxies=trusted_set(web.trusted_proxies),
        public_origin=web.public_origin,
        finetune_data_root=Path(web.finetune_data_root) if web.finetune_data_root else None,
        finetune_runs_dir=Path(web.finetune_runs_dir) if web.finetune_runs_dir else None,
    )
    server = ServerOptions(
        host=web.host,
        port=web.port,
        auth=auth_from_env(env),
        quiet=True,
        limits=web.limit_settings(),
        trusted_proxies=trusted_set(web.trusted_proxies),
        public_origins=web.public_origins(),
    )
    return ui, server


def check_port_free(host: str, port: int) -> None:
    """Raise OSError when nothing could listen on ``host``:``port`` now (taken, or an address this
    machine does not have), as Gradio's own check does before it starts its server (SO_REUSEADDR: a
    port in TIME_WAIT counts as free). Checked before the model loads, so that a busy port fails in
    a second, not after a load of the weights. Port 0 (Gradio picks one) is not checked."""
    if not port:
        return
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1] -> ::1
    family, kind, proto, _name, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)


def _cannot_serve(host: str, port: int, error: OSError) -> int:
    logger.error(
        "cannot serve on %s:%s (%s); choose another --port / CODEC_PORT or stop what uses it", host, port, error
    )
    return 1


def _stage(name: str, start: float) -> float:
    now = time.perf_counter()
    logger.info("startup: %s (%.2f s)", name, now - start)
    return now


def _stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (installed first, so a stop during the model load
    also ends cleanly)."""
    stop = threading.Event()

    def handle(signum, _frame):
        logger.info("received %s; shutting down", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return stop


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format=LOG_FORMAT)
    stop = _stop_on_signals()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    started_at, t = time.time(), time.perf_counter()
    try:
        settings = settings_from_args(args)
        web = options.build(WebOptions, args, os.environ)
    except (SettingsError, StartupError) as e:
        logger.error("cannot start: %s", e)
        return 2
    logging.getLogger().setLevel(web.log_level)
    try:
        check_port_free(web.host, web.port)
    except OSError as e:
        return _cannot_serve(web.host, web.port, e)
    t = _stage(f"settings: model={settings.model} device={settings.device} dtype={settings.dtype}", t)
    try:
        ui, server = split_options(web, os.environ)
    except (SettingsError, StartupError) as e:
        logger.error("cannot start: %s", e)
        return 2
    server = replace(server, max_file_bytes=settings.max_file_bytes)
    t = _stage("the web app imported (gradio, torch)", t)

    try:
        storage.use_for_process(ui.temp_root)  # every temp file of this process under one root
    except OSError as e:
        logger.error(
            "cannot start: the temp folder %s cannot be created (%s); choose another --temp-dir", ui.temp_root, e
        )
        return 2
    from core.model import live_warm
    from core.model.engine import Engine  # imports torch: after the flags are known to be valid

    engine = Engine(settings)
    t = _stage("engine created", t)
    report = engine.warm_up()
    t = _stage(f"model loaded and checked: {'ready' if report.ok else 'NOT ready: ' + str(engine.error or '')}", t)
    if report.ok and live_warm.warm(engine) is not None:  # the first visitor's first packet is not the process's
        t = _stage("live path warmed", t)
    if report.ok and engine.streams.warm() is not None:  # /decode/ws's first client waits for no capture
        t = _stage("stream decoding warmed", t)
    if settings.compare_model:  # a second checkpoint that cannot load leaves the server running: the page says why
        from core.model.second import load_second

        other = load_second(engine, settings.compare_model)
        t = _stage(f"second checkpoint {settings.compare_model}: {other.state.value} {other.error or ''}".rstrip(), t)
    if stop.is_set():
        return 0
    from webui.app import build_app  # gradio and every tab
    from webui.server import launch

    demo = build_app(engine, ui)
    t = _stage("UI built", t)
    try:
        launch(demo, engine, ui, server, started_at)
    except OSError as e:  # taken between the check above and now
        return _cannot_serve(server.host, server.port, e)
    _stage(f"serving on http://{server.host}:{server.port}", t)
    if share_link.is_loopback(server.host) and not ui.public_origin:
        logger.info(
            "only this machine can open the page and shared tests' links; for other devices: --host 0.0.0.0 "
            "--public-origin http://ADDRESS:%s (README: Reaching the page from another machine)",
            server.port,
        )
    try:
        while not stop.wait(1.0):
            pass
    finally:
        demo.close()
        logger.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
