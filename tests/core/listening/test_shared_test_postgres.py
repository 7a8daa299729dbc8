"""Shared tests on a real PostgreSQL server (issue 28): the test starts one (Debian's postgresql 15:
initdb into a temporary folder, run as the ``postgres`` user when this runs as root), points
``CODEC_DATABASE_URL`` at it and runs the same flows as on SQLite; then restarts the server and
finds every answer."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from shared_test_cases import AUDIO, GOOD, PLAN, abx_flow, limits_flow, mushra_flow

from core.listening import shared_test_db
from core.listening.shared_test_store import SharedTestStore
from tests.ports import reserve_port
from tests.postgres_server import BIN, Postgres

pytestmark = pytest.mark.service


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
    mushra_flow(SharedTestStore(shared_test_db.Database(url=postgres.url)))


def test_abx_flow_on_postgresql(postgres):
    abx_flow(SharedTestStore(shared_test_db.Database(url=postgres.url)))


def test_a_server_restart_loses_nothing(postgres):
    store = SharedTestStore(shared_test_db.Database(url=postgres.url))
    link, owner = store.create("mushra", "sha", PLAN.to_dict(), AUDIO)
    key, _ = store.join(link, "ann")
    store.rate(link, key, 0, GOOD)
    postgres.stop()
    postgres.start()
    again = SharedTestStore(shared_test_db.Database(url=postgres.url))
    assert len(again.responses(link, owner)["ratings"]) == len(GOOD)
    assert (again.audio(link, 0, "opus6") == AUDIO[(0, "opus6")]).all()


def test_an_unreachable_server_is_said_in_words():
    store = SharedTestStore(shared_test_db.Database(url=f"postgresql://nobody@127.0.0.1:{reserve_port()}/x"))
    with pytest.raises(shared_test_db.SharedTestDbError, match="Cannot reach the PostgreSQL server"):
        store.open_test("A" * 32)


def test_limits_on_postgresql_are_shared_by_two_replicas(postgres):
    limits_flow(lambda: shared_test_db.Database(url=postgres.url))
