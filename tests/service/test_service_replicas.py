"""Two CPU replicas of the app under the real supervisord, behind a real nginx, with the shipped
deploy/supervisord.replicas.conf: each browser session stays on one replica, both are used; and
issue 28's shared listening test on them, stored in one SQLite file (the replicas' data folder) or
on a real PostgreSQL server the test starts (``CODEC_DATABASE_URL``): the link lands on either
replica (each listener's session cookie pins one), every listener's ratings go into the one
database, and the pooled result counts them all.

One start of the replicas per database serves every test here (a module fixture with the database
as its parameter): a start is two app processes, supervisord and nginx, about a minute of both
cores. The shared-test tests had a start of their own before (a test file of their own): three
starts in all, against two now, with every check as it was."""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from service_harness import HOST, REPO, Service

from core.listening import mushra, shared_test_db, shared_test_results
from core.listening.shared_test_store import SharedTestStore
from tests.ports import reserve_block, reserve_port

REPLICAS_CONF = REPO / "deploy" / "supervisord.replicas.conf"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
        reason="nginx is not installed (make test installs it: TEST_DEBS)",
    ),
]


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{REPLICAS_CONF.name} no longer contains {old!r}: update this test"
    return text.replace(old, new)


class Replicas(Service):
    def __init__(self, root: Path, model: str):
        super().__init__(root, model)
        self.base = reserve_block(2, align=100)  # the config numbers its ports PP%(process_num)02d
        self.listen = reserve_port()

    def write_config(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "supervisord.conf", self.conf)
        text = REPLICAS_CONF.read_text()
        prefix = str(self.base // 100)
        for old, new in [
            ('CODEC_MODEL="Qwen/Qwen3-TTS-Tokenizer-12Hz"', f'CODEC_MODEL="{self.env_line.split(chr(34))[1]}"'),
            ('CODEC_DEVICE="cuda:%(process_num)d"', 'CODEC_DEVICE="cpu"'),
            ('CODEC_PORT="78%(process_num)02d"', f'CODEC_PORT="{prefix}%(process_num)02d"'),
            ("%(here)s/.venv/bin/python %(here)s/deploy/replicas.py", f"{sys.executable} {REPO}/deploy/replicas.py"),
            (
                "--replicas 2 --base-port 7800 --listen 0.0.0.0:7860",
                f"--replicas 2 --base-port {self.base} --listen {HOST}:{self.listen} --runtime-dir {self.logs}",
            ),
            ("directory = %(here)s\n", f"directory = {REPO}\n"),
        ]:
            text = _replace_once(text, old, new)
        text = text.replace("[program:webui]\n", f"[program:webui]\ncommand = {self.command}\ndirectory = {REPO}\n", 1)
        (self.root / "supervisord.local.conf").write_text(text)

    def proxy(self, path: str, cookie: str | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(f"http://{HOST}:{self.listen}{path}")
        if cookie:
            request.add_header("Cookie", f"cw_replica={cookie}")
        with urllib.request.urlopen(request, timeout=30) as r:
            r.read()
            return r.status, {k.lower(): v for k, v in r.headers.items()}


class SharedTestReplicas(Replicas):
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


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def replicas(request, tmp_path_factory, tiny_checkpoint):
    """The replicas, ready (each directly, then through nginx), on one database for the module's tests."""
    service = SharedTestReplicas(tmp_path_factory.mktemp(f"replicas-{request.param}"), str(tiny_checkpoint))
    server = None
    if request.param == "postgresql":
        from tests.postgres_server import BIN, Postgres

        if not (BIN / "initdb").exists():
            pytest.fail("PostgreSQL is not installed: make test installs it (TEST_DEBS: postgresql)")
        server = Postgres(Path(tempfile.mkdtemp(prefix="cw-postgres-")))
        server.start()
        service.database_url = server.url
    try:
        service.start()
        for port in (service.base, service.base + 1):  # each replica directly, then through nginx
            _at(service, port).wait_for("/ready", 200, timeout=300)
        _at(service, service.listen).wait_for("/ready", 200, timeout=60)
        yield service
    finally:
        service.close()
        if server is not None:
            server.stop()
            shutil.rmtree(server.folder, ignore_errors=True)


def test_two_replicas_behind_nginx_keep_sessions_and_both_serve(replicas, tmp_path, speech):
    from gradio_client import Client, handle_file

    sessions: dict[str, str] = {}  # upstream -> the cookie of a session placed there
    for _ in range(24):  # new sessions land by their random id: both replicas come up quickly
        _status, headers = replicas.proxy("/")
        cookie = re.match(r"cw_replica=([^;]+)", headers["set-cookie"]).group(1)
        sessions.setdefault(headers["x-codec-replica"], cookie)
        if len(sessions) == 2:
            break
    assert sorted(sessions) == sorted(f"{HOST}:{p}" for p in (replicas.base, replicas.base + 1)), sessions

    clip = tmp_path / "clip.wav"
    sf.write(clip, speech(1.0), 24_000)
    for upstream, cookie in sessions.items():
        for _ in range(3):  # the page, again and again: the same replica, and no new cookie
            _status, headers = replicas.proxy("/", cookie)
            assert headers["x-codec-replica"] == upstream and "set-cookie" not in headers
        client = Client(f"http://{HOST}:{replicas.listen}/", headers={"Cookie": f"cw_replica={cookie}"}, verbose=False)
        token_path, _summary, _heatmap, _text = client.predict(handle_file(str(clip)), api_name="/encode")
        assert Path(token_path).stat().st_size > 0

    log = (replicas.logs / "nginx-access.log").read_text()
    for upstream, cookie in sessions.items():
        lines = [line for line in log.splitlines() if f"cw_replica={cookie} " in line]
        assert any("/gradio_api/queue/join" in line for line in lines), lines
        assert {re.search(r"upstream=(\S+)", line).group(1) for line in lines} == {upstream}


def _at(service: Service, port: int) -> Service:
    """The same service, asked on another port (a replica directly, or the proxy)."""
    view = object.__new__(Service)
    view.__dict__.update(service.__dict__)
    view.port = port
    return view


GOOD = {"original": 97, "lp3.5": 10, "lp7": 30, "reconstruction": 70}


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
    store = SharedTestStore(
        shared_test_db.Database(replicas.root / "data", url=replicas.database_url or None)
    )  # the same database
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
        from webui.jobs import shared_test

        slots = shared_test.mushra_slots(info.seed, who.listener, 0, info.plan["conditions"])
        ratings = {h: GOOD[slots[h]] + n for h in state["sounds"]}
        done, headers = _call(replicas, f"/listen/{link}/rate", cookie, key, {"screen": 0, "ratings": ratings})
        assert headers["x-codec-replica"] == upstream and done["screen"] is None
    got = store.responses(link, owner)
    pooled = shared_test_results.pool_mushra(plan.conditions, got["ratings"])
    assert (pooled.listeners, pooled.kept) == (2, 2)
    codec = next(r for r in pooled.conditions if r.condition == "reconstruction")
    assert codec.ci.mean == 70.5 and codec.ci.n == 2

    # The answer limit is counted in that database too: one client's answers spread over both
    # replicas are refused after the limit, not after twice it.
    from webui.serving.shared_test_routes import ANSWERS_PER_MIN

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
