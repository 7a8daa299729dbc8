"""A throw-away PostgreSQL server for tests (Debian's postgresql: initdb into a temporary folder,
run as the ``postgres`` user when the tests run as root, which initdb refuses)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

from tests.ports import reserve_port

BIN: Path = next(
    (p for p in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True) if (p / "initdb").exists()),
    Path("/usr/lib/postgresql/15/bin"),
)


class Postgres:
    """A throw-away PostgreSQL server in ``folder``."""

    def __init__(self, folder: Path):
        self.folder, self.port = folder, reserve_port()
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self.data = folder / "data"
        folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(folder, self.user)
        self._run(BIN / "initdb", "-D", self.data, "-U", self.user, "--auth=trust", "-E", "UTF8")

    def _run(self, *args) -> None:
        command = [str(a) for a in args]
        if os.geteuid() == 0:  # initdb refuses root
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.folder)
        if done.returncode:
            raise RuntimeError(f"{command} failed ({done.returncode}): {done.stderr or done.stdout}")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(BIN / "pg_ctl", "-D", self.data, "-o", options, "-l", self.folder / "log", "-w", "start")

    def stop(self) -> None:
        self._run(BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"
