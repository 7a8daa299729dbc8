"""Shared tests on a real PostgreSQL server (issue 28): the test starts one (Debian's postgresql 15:
initdb into a temporary folder, run as the ``postgres`` user when this runs as root), points
``CODEC_DATABASE_URL`` at it and runs the same flows as on SQLite; then restarts the server and
finds every answer."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
from room_cases import AUDIO, GOOD, PLAN, abx_flow, mushra_flow

from core.judging import room_db
from core.judging.room_store import RoomStore

pytestmark = pytest.mark.service
BIN: Path = next(
    (p for p in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True) if (p / "initdb").exists()),
    Path("/usr/lib/postgresql/15/bin"),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """A throw-away PostgreSQL server in ``folder``."""

    def __init__(self, folder: Path):
        self.folder, self.port = folder, _free_port()
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


@pytest.fixture(scope="module")
def postgres():
    if not (BIN / "initdb").exists():
        pytest.fail("PostgreSQL is not installed: make test installs it (TEST_DEBS: postgresql)")
    pytest.importorskip("psycopg", reason="psycopg is in requirements-postgres.txt, which make test installs")
    folder = Path(
        tempfile.mkdtemp(prefix="cw-postgres-")
    )  # not under pytest's root-only folder: the server's user reads it
    server = Postgres(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_mushra_flow_on_postgresql(postgres):
    mushra_flow(RoomStore(room_db.Database(url=postgres.url)))


def test_abx_flow_on_postgresql(postgres):
    abx_flow(RoomStore(room_db.Database(url=postgres.url)))


def test_a_server_restart_loses_nothing(postgres):
    store = RoomStore(room_db.Database(url=postgres.url))
    link, owner = store.create("mushra", "sha", PLAN.to_dict(), AUDIO)
    key, _ = store.join(link, "ann")
    store.rate(link, key, 0, GOOD)
    postgres.stop()
    postgres.start()
    again = RoomStore(room_db.Database(url=postgres.url))
    assert len(again.responses(link, owner)["ratings"]) == len(GOOD)
    assert (again.audio(link, 0, "opus6") == AUDIO[(0, "opus6")]).all()


def test_an_unreachable_server_is_said_in_words():
    store = RoomStore(room_db.Database(url=f"postgresql://nobody@127.0.0.1:{_free_port()}/x"))
    with pytest.raises(room_db.RoomDbError, match="Cannot reach the PostgreSQL server"):
        store.open_test("A" * 32)
