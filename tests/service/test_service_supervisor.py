"""The web UI as a supervisord service: the shipped supervisord.conf, run from a temporary
directory on the tiny checkpoint and a free port on 127.0.0.1.

Tests in this module share one running service and run in file order: health first, then a
kill -9 (the service comes back), then a stop (nothing is left behind).
"""

from __future__ import annotations

import os
import re
import signal
import time

import psutil
import pytest
from service_harness import Service, wait_until

pytestmark = pytest.mark.slow

FIRST_READY_S = 120  # cold start on 2 busy cores: imports, model load, warm-up round trip
RESTART_READY_S = 30  # the bound for coming back after kill -9
STOP_S = 30  # supervisorctl stop returns once the app is gone (stopwaitsecs is 20)

# Startup stages the app logs to stderr, each with its time (webui/__main__.py), in order:
# "startup: <stage> (1.23 s)". The engine adds the load time and the readiness steps.
STARTUP_STAGES = (
    r"startup: settings: model=\S+ device=cpu dtype=float32 \(\d+\.\d+ s\)",
    r"startup: engine created \(\d+\.\d+ s\)",
    r"startup: model loaded and checked: ready \(\d+\.\d+ s\)",
    r"startup: UI built \(\d+\.\d+ s\)",
    r"startup: serving on http://127\.0\.0\.1:\d+ \(\d+\.\d+ s\)",
)
ENGINE_LINES = (
    r"model loaded from \S+ in \d+\.\d+ s",
    r"readiness: cuda=skipped, weights=pass, roundtrip=pass",
)


@pytest.fixture(scope="module")
def service(tiny_checkpoint, tmp_path_factory):
    svc = Service(tmp_path_factory.mktemp("svc"), model=str(tiny_checkpoint))
    try:
        svc.start()
        svc.wait_for("/ready", 200, FIRST_READY_S)
        # supervisord calls it RUNNING once it has lived startsecs (10 s) without exiting
        wait_until(lambda: "RUNNING" in svc.ctl("status", "webui").stdout, 30, "webui to be RUNNING")
        yield svc
    finally:
        svc.close()
    assert not svc.app_processes(), "app processes survived the supervisord shutdown"


def test_ready_and_health(service):
    status, ready = service.get_json("/ready")
    assert status == 200 and ready["ready"] is True, ready
    status, health = service.get_json("/health")
    assert status == 200
    assert health["status"] == "ready", health
    assert health["engine"]["device"] == "cpu"
    assert health["readiness"]["ok"] is True
    assert {s["name"] for s in health["readiness"]["steps"]} == {"cuda", "weights", "roundtrip"}
    assert health["versions"]["torch"] and health["versions"]["gradio"]
    assert health["uptime_s"] > 0
    assert health["pid"] == service.app_pid(), "/health must be served by the supervised process"
    status, page = service.get("/")
    assert status == 200 and b"<html" in page.lower()


def test_supervisorctl_status(service):
    result = service.ctl("status", "webui")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"webui\s+RUNNING\s+pid \d+", result.stdout), result.stdout


def test_startup_stages_are_logged_with_times(service):
    """logs/webui.log (written by supervisord) has every stage, in order, before serving."""
    log = service.app_log_text()
    positions = []
    for pattern in STARTUP_STAGES + ENGINE_LINES:
        match = re.search(pattern, log)
        assert match, f"logs/webui.log has no line matching {pattern!r}:\n{log[-4000:]}"
        positions.append(match.start())
    stages = positions[: len(STARTUP_STAGES)]
    assert stages == sorted(stages), "startup stages are logged out of order"
    load, check = positions[len(STARTUP_STAGES) :]
    assert load < check < stages[-1], "the model must be loaded and checked before serving"


def test_kill_9_is_restarted_and_ready_again(service):
    old = service.app_pid()
    assert old, service.diagnostics()
    killed_at = time.monotonic()
    os.kill(old, signal.SIGKILL)
    new = wait_until(
        lambda: (p := service.app_pid()) and p != old and p, RESTART_READY_S, "supervisord to start a new app process"
    )
    assert not psutil.pid_exists(old) or psutil.Process(old).status() == psutil.STATUS_ZOMBIE
    service.wait_for("/ready", 200, max(1.0, RESTART_READY_S - (time.monotonic() - killed_at)))
    elapsed = time.monotonic() - killed_at
    assert elapsed <= RESTART_READY_S, f"ready again only after {elapsed:.1f} s"
    status, health = service.get_json("/health")
    assert health["pid"] == new and health["uptime_s"] <= elapsed + 1, health
    print(f"ready again {elapsed:.1f} s after kill -9 (pid {old} -> {new})")


def test_stop_leaves_no_app_process(service):
    pid = service.app_pid()
    assert pid
    group = os.getpgid(pid)
    result = service.ctl("stop", "webui", timeout=STOP_S + 30)
    assert "stopped" in result.stdout, result.stdout + result.stderr
    wait_until(
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
        5,
        f"app pid {pid} to exit",
    )
    left = service.app_processes()
    assert not left, f"still running after stop: {[p.cmdline() for p in left]}"
    in_group = [p.pid for p in psutil.process_iter() if _pgid(p.pid) == group]
    assert not in_group, f"processes left in the app's process group {group}: {in_group}"
    assert service.get("/ready")[0] == 0, "something still answers on the app's port"
    status = service.ctl("status", "webui").stdout
    assert "STOPPED" in status, status


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def test_missing_weights_report_failed_but_page_loads(tmp_path):
    svc = Service(tmp_path, model=str(tmp_path / "no-such-checkpoint"))
    try:
        svc.start()
        status, health = svc.wait_for("/health", 200, FIRST_READY_S)
        wait_until(lambda: svc.get_json("/health")[1]["status"] != "loading", 30, "the engine to settle")
        status, health = svc.get_json("/health")
        assert health["status"] == "failed" and health["ready"] is False, health
        assert "no-such-checkpoint" in health["reason"] and "does not exist" in health["reason"], health
        assert health["engine"]["error"], health
        status, ready = svc.get_json("/ready")
        assert status == 503 and ready["ready"] is False, ready
        assert ready["reason"] == health["reason"]
        status, page = svc.get("/")
        assert status == 200 and b"<html" in page.lower(), "the page must still load"
        # The app keeps serving: supervisord shows one steady process, no restart loop.
        pid = svc.app_pid()
        time.sleep(2)
        assert svc.app_pid() == pid
    finally:
        svc.close()
    assert not svc.app_processes()
