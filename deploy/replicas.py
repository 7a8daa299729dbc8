"""Several app replicas behind nginx: render the nginx config and run nginx in the foreground.

``python deploy/replicas.py --replicas 2 --base-port 7800 --listen 7860`` writes
``logs/nginx.conf`` from ``deploy/nginx/codec-workbench.conf.template`` (one upstream server per
replica: base port + replica number, the ports supervisord gives the replicas) and, with
``--exec``, replaces itself with ``nginx -c logs/nginx.conf`` (supervisord's [program:nginx]).
docs/scaling.md has the whole setup.
"""

from __future__ import annotations

import argparse
import logging
import os
import pwd
import shutil
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent  # the checkout
TEMPLATE = ROOT / "deploy" / "nginx" / "codec-workbench.conf.template"
DEFAULT_RUNTIME = ROOT / "logs"  # nginx's pid, logs and temp files (git ignores logs/)
UPSTREAM_HOST = "127.0.0.1"  # replicas listen here only; nginx is the way in
MAX_BODY_MB = 1100  # uploads nginx lets through: above the app's default max_file_mb (1024 MiB)


def replica_ports(replicas: int, base_port: int) -> list[int]:
    """Replica N listens on base_port + N (supervisord: CODEC_PORT="78%(process_num)02d" for 7800)."""
    return [base_port + n for n in range(replicas)]


def render(ports: list[int], listen: str, runtime: Path, max_body_mb: int = MAX_BODY_MB) -> str:
    """The nginx config for replicas on ``ports``, listening on ``listen`` (port or host:port)."""
    user = ""
    if os.geteuid() == 0:  # a root master hands workers to this user: the one owning the runtime folder
        user = f"user {pwd.getpwuid(runtime.stat().st_uid).pw_name};"
    servers = "\n".join(f"        server {UPSTREAM_HOST}:{p} max_fails=1 fail_timeout=5s;" for p in ports)
    text = TEMPLATE.read_text()
    for key, value in {
        "user": user,
        "runtime": str(runtime),
        "servers": servers,
        "listen": listen,
        "max_body_mb": str(max_body_mb),
    }.items():
        text = text.replace("{" + key + "}", value)
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python deploy/replicas.py", description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, required=True, help="app replicas (supervisord numprocs)")
    parser.add_argument("--base-port", type=int, default=7800, help="replica N listens on base-port + N")
    parser.add_argument("--listen", default="127.0.0.1:7860", help="where nginx listens (port or host:port)")
    parser.add_argument("--runtime-dir", type=Path, default=DEFAULT_RUNTIME, help="nginx pid, logs, temp files")
    parser.add_argument("--exec", action="store_true", help="then run nginx in the foreground (supervisord)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.replicas < 1:
        sys.stderr.write("error: --replicas must be at least 1\n")
        return 2
    runtime = args.runtime_dir.resolve()
    runtime.mkdir(parents=True, exist_ok=True)
    conf = runtime / "nginx.conf"
    conf.write_text(render(replica_ports(args.replicas, args.base_port), args.listen, runtime))
    logger.info("wrote %s: %d replicas from port %d, listening on %s", conf, args.replicas, args.base_port, args.listen)
    if not args.exec:
        return 0
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        sys.stderr.write("error: nginx is not installed; on Debian: apt-get install nginx\n")
        return 1
    os.execv(nginx, [nginx, "-c", str(conf), "-e", str(runtime / "nginx-error.log")])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
