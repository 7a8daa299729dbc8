"""Two CPU replicas of the app under the real supervisord, behind a real nginx, with the shipped
deploy/supervisord.replicas.conf: each browser session stays on one replica, both are used."""

from __future__ import annotations

import random
import re
import shutil
import socket
import sys
import urllib.request
from pathlib import Path

import pytest
import soundfile as sf
from service_harness import HOST, REPO, Service, free_port

REPLICAS_CONF = REPO / "deploy" / "supervisord.replicas.conf"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
        reason="nginx is not installed (make test installs it: TEST_DEBS)",
    ),
]


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _base_port() -> int:
    """A free pair base, base + 1 with base a multiple of 100 (the config writes PP%(process_num)02d)."""
    for _ in range(50):
        base = random.randrange(200, 600) * 100
        if _port_free(base) and _port_free(base + 1):
            return base
    raise RuntimeError("no free port pair")


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{REPLICAS_CONF.name} no longer contains {old!r}: update this test"
    return text.replace(old, new)


class Replicas(Service):
    def __init__(self, root: Path, model: str):
        super().__init__(root, model)
        self.base = _base_port()
        self.listen = free_port()

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


@pytest.fixture
def replicas(tmp_path, tiny_checkpoint):
    service = Replicas(tmp_path, str(tiny_checkpoint))
    try:
        yield service.start()
    finally:
        service.close()


def test_two_replicas_behind_nginx_keep_sessions_and_both_serve(replicas, tmp_path, speech):
    from gradio_client import Client, handle_file

    for port in (replicas.base, replicas.base + 1):  # each replica directly, then through nginx
        _at(replicas, port).wait_for("/ready", 200, timeout=300)
    _at(replicas, replicas.listen).wait_for("/ready", 200, timeout=60)

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
