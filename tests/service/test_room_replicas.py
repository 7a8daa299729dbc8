"""Issue 28: a shared listening test on two replicas behind nginx, stored in one SQLite file (the
replicas' data folder) or on a real PostgreSQL server the test starts (``CODEC_DATABASE_URL``): the
link lands on either replica (each listener's session cookie pins one), every listener's ratings go
into the one database, and the pooled result counts them all. The answer limit is counted in that
database too: one client's answers spread over both replicas are refused after the limit, not after
twice it."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from service_harness import HOST
from test_service_replicas import Replicas, _at

from core.judging import mushra, room_db, room_results
from core.judging.room_store import RoomStore

pytestmark = pytest.mark.slow
GOOD = {"original": 97, "lp3.5": 10, "lp7": 30, "reconstruction": 70}


class RoomReplicas(Replicas):
    """The shipped replicas config, with a data folder of the test's own (shared by both replicas)
    and, given one, a PostgreSQL URL."""

    database_url = ""

    def write_config(self) -> None:
        super().write_config()
        conf = self.root / "supervisord.local.conf"
        text = conf.read_text()
        old = 'CODEC_TRUSTED_PROXIES="127.0.0.1"'
        assert text.count(old) == 1
        extra = f'CODEC_DATA_DIR="{self.root / "data"}",CODEC_DATABASE_URL="{self.database_url}"'
        conf.write_text(text.replace(old, f"{old},{extra}"))


@pytest.fixture(params=["sqlite", "postgresql"])
def replicas(request, tmp_path, tiny_checkpoint):
    service = RoomReplicas(tmp_path, str(tiny_checkpoint))
    server = None
    if request.param == "postgresql":
        from tests.postgres_server import BIN, Postgres

        if not (BIN / "initdb").exists():
            pytest.fail("PostgreSQL is not installed: make test installs it (TEST_DEBS: postgresql)")
        server = Postgres(Path(tempfile.mkdtemp(prefix="cw-postgres-")))
        server.start()
        service.database_url = server.url
    try:
        yield service.start()
    finally:
        service.close()
        if server is not None:
            server.stop()
            shutil.rmtree(server.folder, ignore_errors=True)


def _call(replicas, path: str, replica_cookie: str | None, listener: str | None = None, body: dict | None = None):
    request = urllib.request.Request(f"http://{HOST}:{replicas.listen}{path}")
    cookies = [
        c for c in (replica_cookie and f"cw_replica={replica_cookie}", listener and f"cw_listener={listener}") if c
    ]
    if cookies:
        request.add_header("Cookie", "; ".join(cookies))
    if body is not None:
        request.add_header("Content-Type", "application/json")
        request.data = json.dumps(body).encode()
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read()), {k.lower(): v for k, v in r.headers.items()}


def test_listeners_on_two_replicas_pool_into_one_result(replicas):
    for port in (replicas.base, replicas.base + 1):
        _at(replicas, port).wait_for("/ready", 200, timeout=300)
    _at(replicas, replicas.listen).wait_for("/ready", 200, timeout=60)
    store = RoomStore(room_db.Database(replicas.root / "data", url=replicas.database_url or None))  # the same database
    plan = mushra.plan(["reconstruction"], [(0.0, 1.0)])
    audio = {(0, c): (np.arange(24_000) % 300).astype(np.int16) for c in plan.conditions}
    link, owner = store.create("mushra", "sha", plan.to_dict(), audio)

    sessions: dict[str, str] = {}  # upstream -> a replica cookie placed there
    for _ in range(24):
        _body, headers = _call(replicas, f"/listen/{link}/state", None)
        cookie = re.match(r"cw_replica=([^;]+)", headers["set-cookie"]).group(1)
        sessions.setdefault(headers["x-codec-replica"], cookie)
        if len(sessions) == 2:
            break
    assert len(sessions) == 2, sessions
    for n, (upstream, cookie) in enumerate(sessions.items()):
        state, headers = _call(replicas, f"/listen/{link}/join", cookie, body={"nickname": f"on-{n}"})
        assert headers["x-codec-replica"] == upstream and state["joined"]
        key = re.search(r"cw_listener=([^;]+)", headers["set-cookie"]).group(1)
        info, who = store.listener(link, key)
        from webui.jobs import room as room_jobs

        slots = room_jobs.mushra_slots(info.seed, who.listener, 0, info.plan["conditions"])
        ratings = {h: GOOD[slots[h]] + n for h in state["sounds"]}
        done, headers = _call(replicas, f"/listen/{link}/rate", cookie, key, {"screen": 0, "ratings": ratings})
        assert headers["x-codec-replica"] == upstream and done["screen"] is None
    got = store.responses(link, owner)
    pooled = room_results.pool_mushra(plan.conditions, got["ratings"])
    assert (pooled.listeners, pooled.kept) == (2, 2)
    codec = next(r for r in pooled.conditions if r.condition == "reconstruction")
    assert codec.ci.mean == 70.5 and codec.ci.n == 2

    from webui.serving.room_routes import ANSWERS_PER_MIN

    while time.time() % 60 > 50:  # the burst stays inside one clock minute (the window slides over two)
        time.sleep(1)
    answers = [_status(replicas, f"/listen/{link}/rate", list(sessions.values())[n % 2]) for n in range(31)]
    assert {upstream for _code, upstream in answers} == set(sessions)  # both replicas took a share
    assert [code for code, _ in answers] == [403] * ANSWERS_PER_MIN + [429] * (31 - ANSWERS_PER_MIN)


def _status(replicas, path: str, replica_cookie: str) -> tuple[int, str]:
    """(HTTP status, which replica answered) of a bad answer with no listener cookie."""
    try:
        _body, headers = _call(replicas, path, replica_cookie, body={"screen": "x"})
        return 200, headers["x-codec-replica"]
    except urllib.error.HTTPError as e:
        return e.code, e.headers["X-Codec-Replica"]
