"""Run the real supervisord.conf in a temporary directory, for the service tests.

The repository's supervisord.conf is copied into a temporary directory (so %(here)s, the
logs, the socket and the pid file all live there) and a supervisord.local.conf beside it
re-opens [program:webui] with this interpreter, a free port on 127.0.0.1 and the test's
checkpoint. That is the override mechanism the README documents, so the tests exercise the
shipped file. Everything started here is stopped in :meth:`Service.close`, whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from tests.ports import reserve_port

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "supervisord.conf"
HOST = "127.0.0.1"
CTL_TIMEOUT_S = 60  # one supervisorctl call
SHUTDOWN_TIMEOUT_S = 40  # supervisord stops the app (stopwaitsecs 20) and exits


class Service:
    """supervisord (foreground, as a child of the test) running the webui program."""

    def __init__(
        self,
        root: Path,
        model: str,
        *,
        device: str = "cpu",
        port: int | None = None,
        command: str | None = None,
        extra_env: dict[str, str] | None = None,
    ):
        self.root = Path(root)
        self.port = port or reserve_port()
        self.conf = self.root / "supervisord.conf"
        self.logs = self.root / "logs"
        self.app_log = self.logs / "webui.log"
        self.command = command or f"{sys.executable} -m webui"  # host and port come from the environment
        env = {
            "CODEC_MODEL": model,
            "CODEC_DEVICE": device,
            "CODEC_DTYPE": "float32",
            "CODEC_HOST": HOST,
            "CODEC_PORT": str(self.port),
        }
        env.update(extra_env or {})
        self.env_line = ",".join(f'{k}="{v}"' for k, v in env.items())
        self.proc: subprocess.Popen | None = None
        self.app_pids: set[int] = set()  # every app pid seen, killed on close if still alive

    # ---- lifecycle ---------------------------------------------------------------------
    def write_config(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        shutil.copy(CONFIG, self.conf)
        (self.root / "supervisord.local.conf").write_text(
            f"[program:webui]\ncommand = {self.command}\ndirectory = {REPO}\nenvironment = {self.env_line}\n"
        )

    def start(self) -> Service:
        self.write_config()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CODEC_")}
        env["HF_HUB_OFFLINE"] = "1"  # tests never reach a hub
        out = open(self.root / "supervisord.out", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(self.conf)],
            cwd=self.root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out.close()
        return self

    def ctl(self, *args: str, timeout: float = CTL_TIMEOUT_S) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(self.conf), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def app_pid(self) -> int | None:
        """The app's pid as supervisord reports it (None while it is not running)."""
        try:
            out = self.ctl("pid", "webui").stdout.strip()
        except subprocess.TimeoutExpired:
            return None
        if out.isdigit() and int(out) > 0:
            self.app_pids.add(int(out))
            return int(out)
        return None

    def app_processes(self) -> list[psutil.Process]:
        """Live processes that run our app: a pid seen before, or ``webui`` with our port."""
        found = []
        for p in psutil.process_iter(["pid", "cmdline", "status"]):
            try:
                if p.info["status"] == psutil.STATUS_ZOMBIE:
                    continue
                if p.pid in self.app_pids:
                    found.append(p)
                elif "webui" in " ".join(p.info["cmdline"] or []) and p.environ().get("CODEC_PORT") == str(self.port):
                    found.append(p)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def close(self) -> None:
        """Shut supervisord down and make sure nothing we started is left, whatever state."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.app_pid()
                self.ctl("shutdown", timeout=SHUTDOWN_TIMEOUT_S)
                self.proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
            except (subprocess.TimeoutExpired, OSError):
                pass
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        for p in self.app_processes():
            try:
                if os.getpgid(p.pid) == p.pid:  # the app leads its own process group
                    os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass

    # ---- HTTP --------------------------------------------------------------------------
    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        """(status, body) of GET http://127.0.0.1:port/path; status 0 when nothing answers."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.port}{path}", timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return 0, b""

    def get_json(self, path: str) -> tuple[int, dict | None]:
        status, body = self.get(path)
        try:
            return status, json.loads(body) if body else None
        except ValueError:
            return status, None

    def wait_for(self, path: str, want: int, timeout: float) -> tuple[int, dict | None]:
        """Poll ``path`` until it answers ``want``; fail with what was seen and the logs."""
        deadline = time.monotonic() + timeout
        status, body = 0, None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"supervisord exited with {self.proc.returncode}\n{self.diagnostics()}")
            status, body = self.get_json(path)
            if status == want:
                return status, body
            time.sleep(0.25)
        raise AssertionError(
            f"{path} did not answer {want} within {timeout:.0f} s (last: {status} {body})\n{self.diagnostics()}"
        )

    def diagnostics(self, lines: int = 40) -> str:
        parts = []
        for name in ("supervisord.out", "logs/supervisord.log", "logs/webui.log"):
            path = self.root / name
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {name} (last {len(tail)} lines) ---\n" + "\n".join(tail))
        return "\n".join(parts) or "(no logs)"

    def app_log_text(self) -> str:
        return self.app_log.read_text(errors="replace") if self.app_log.exists() else ""


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
