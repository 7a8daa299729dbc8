"""The shipped supervisord.conf, Makefile and .ci/run, read the way their tools read them."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from service_harness import CONFIG, REPO
from supervisor.datatypes import RestartUnconditionally
from supervisor.options import ServerOptions


def realize(directory: Path) -> ServerOptions:
    """Parse the config as supervisord does, from a copy in ``directory``."""
    (directory / "logs").mkdir(exist_ok=True)
    shutil.copy(CONFIG, directory / "supervisord.conf")
    options = ServerOptions()
    options.realize(args=["-c", str(directory / "supervisord.conf")])
    return options


def webui_program(options: ServerOptions):
    programs = {p.name: p for g in options.process_group_configs for p in g.process_configs}
    assert "webui" in programs, f"no [program:webui] in {CONFIG}"
    return programs["webui"]


def test_every_path_is_relative_to_the_config(tmp_path):
    raw = CONFIG.read_text()
    assert not re.search(r"(?m)^[^;]*=\s*/", raw), "absolute paths in supervisord.conf; use %(here)s"
    options = realize(tmp_path)
    prog = webui_program(options)
    assert Path(prog.directory) == tmp_path
    assert Path(prog.stdout_logfile) == tmp_path / "logs" / "webui.log"
    assert Path(options.logfile) == tmp_path / "logs" / "supervisord.log"
    assert Path(options.pidfile) == tmp_path / "logs" / "supervisord.pid"
    assert prog.command.startswith(f"{tmp_path}/.venv/bin/python -m webui")


def test_webui_program_keeps_running_and_stops_cleanly(tmp_path):
    prog = webui_program(realize(tmp_path))
    assert prog.autostart is True
    assert prog.autorestart is RestartUnconditionally, "kill -9 or a crash must be restarted"
    assert prog.startsecs >= 1 and prog.startretries >= 1
    assert 5 <= prog.stopwaitsecs <= 60
    assert prog.stopasgroup and prog.killasgroup, "helper processes must not outlive a stop"
    assert "--daemon" not in prog.command and "&" not in prog.command, "the command must stay in the foreground"


def test_logs_rotate_under_logs(tmp_path):
    options = realize(tmp_path)
    prog = webui_program(options)
    assert prog.redirect_stderr, "app logs go to stderr and must land in the log file"
    assert prog.stdout_logfile_maxbytes > 0 and prog.stdout_logfile_backups > 0
    assert options.logfile_maxbytes > 0 and options.logfile_backups > 0


def test_engine_settings_come_from_the_environment(tmp_path):
    env = webui_program(realize(tmp_path)).environment
    assert env["CODEC_MODEL"] == "Qwen/Qwen3-TTS-Tokenizer-12Hz"
    assert env["CODEC_DTYPE"] == "float32"
    assert "CODEC_DEVICE" in env


def test_supervisorctl_reaches_supervisord_over_a_unix_socket(tmp_path):
    options = realize(tmp_path)
    [server] = options.server_configs
    assert server["section"] == "unix_http_server"
    assert Path(server["file"]) == tmp_path / "logs" / "supervisor.sock"
    assert server["chmod"] == 0o700
    factories = [name for name, _factory, _cfg in options.rpcinterface_factories]
    assert "supervisor" in factories, "supervisorctl needs [rpcinterface:supervisor]"
    assert re.search(r"(?m)^serverurl\s*=\s*unix://%\(here\)s/logs/supervisor.sock", CONFIG.read_text())


def test_local_override_file_changes_single_keys(tmp_path):
    (tmp_path / "supervisord.local.conf").write_text(
        '[program:webui]\nenvironment = CODEC_MODEL="/models/qwen",CODEC_DEVICE="cuda:0"\n'
    )
    prog = webui_program(realize(tmp_path))
    assert prog.environment["CODEC_MODEL"] == "/models/qwen"
    assert prog.environment["CODEC_DEVICE"] == "cuda:0"
    assert prog.autorestart is RestartUnconditionally, "keys not overridden keep their values"


def _make_dry_run(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-n", "-B", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_make_run_installs_then_runs_supervisord_in_the_foreground():
    plan = _make_dry_run("run")
    assert "-m venv .venv" in plan and "pip install -q -r requirements.txt -r requirements-judging.txt" in plan
    assert "requirements-dataset.txt" not in plan, "the app needs no Ray: make run leaves the [dataset] extra out"
    assert re.search(r"supervisord -n -c supervisord.conf", plan), plan


def test_make_run_installs_what_pip_needs_to_build_pesq():
    """pesq ships no wheels: pip compiles it, so a fresh Debian machine needs a C compiler and
    Python's headers before the requirements install."""
    for target in ("run", "test"):
        plan = _make_dry_run(target)
        deps = plan.index("ensure-debian-packages.sh")
        assert "build-essential" in plan[deps:] and "python3-dev" in plan[deps:], plan
        assert deps < plan.index("pip install -q -r requirements"), plan


def test_make_installs_python_when_a_fresh_machine_has_none():
    plan = _make_dry_run("run")
    assert re.search(r"command -v python3 .*\|\| scripts/ensure-debian-packages.sh python3 python3-venv", plan), plan


def test_a_fresh_clone_has_the_logs_folder_supervisord_needs(tmp_path):
    """supervisord refuses to start when logs/ is missing, and git keeps no empty folders."""
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "logs"], cwd=REPO, capture_output=True, text=True).stdout
    assert tracked.strip(), "logs/ holds no tracked file, so a fresh clone has no logs/ folder"
    ignored = subprocess.run(["git", "check-ignore", "-q", "logs/webui.log"], cwd=REPO).returncode
    assert ignored == 0, "the logs themselves must stay ignored"


def test_make_test_installs_test_needs_and_runs_every_non_gpu_test():
    plan = _make_dry_run("test")
    for pkg in ("ffmpeg", "sox", "espeak-ng", "chromium"):
        assert pkg in plan
    install = next(line for line in plan.splitlines() if "pip install -q -r" in line)
    for name in ("requirements.txt", "requirements-judging.txt", "requirements-dataset.txt", "requirements-test.txt"):
        assert f"-r {name}" in install, install
    # make test runs every non-GPU test but the slow and the long ones; make test-slow and make
    # test-long run those; CI runs all three
    assert re.search(r"-m pytest -m \"not gpu and not long and not slow\" .*--durations=15", plan), plan
    ci = (REPO / ".ci" / "run").read_text()
    groups = []  # (target, marker expression) of every pytest run a target makes
    for target in ("test", "test-slow", "test-long"):
        assert re.search(rf"^make {target}$", ci, re.M), ci
        run = _make_dry_run(target)
        assert re.search(r"-m pytest -m \"[^\"]+\" -n 2 --dist loadfile", run), run  # parallel, whole files
        groups += [(target, expression) for expression in re.findall(r"-m pytest -m \"([^\"]+)\"", run)]
    # every combination of the markers: a non-GPU test runs exactly once, a GPU test never
    for gpu, slow, long, alone in itertools.product((False, True), repeat=4):
        marks = {"gpu": gpu, "slow": slow, "long": long, "alone": alone, "browser": True, "service": True}
        chosen = [group for group in groups if eval(group[1], {}, marks)]  # noqa: S307
        assert len(chosen) == (0 if gpu else 1), (marks, chosen, groups)


def first_commands(markdown: str, count: int = 2) -> list[str]:
    """The first shell commands of a markdown file's fenced code blocks, comments dropped."""
    commands = []
    for block in re.findall(r"(?ms)^```(?:bash|sh|console)?\n(.*?)^```", markdown):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                commands.append(line)
    return commands[:count]


@pytest.mark.parametrize("doc", ["README.md", "docs/service.md"])
def test_docs_start_with_the_two_commands(doc):
    path = REPO / doc
    if not path.exists():
        pytest.skip(f"{doc} not written yet")
    assert first_commands(path.read_text()) == ["make run", "make test"]


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in ci
    assert re.search(r"(?m)^make test$", ci), "CI must run the README's test command"


def test_every_file_of_the_longest_first_order_exists():
    """tests/conftest.py's LONGEST_FIRST names files by path: a renamed or moved file would silently
    lose its early start (and the order its two processes were balanced by)."""
    from tests.conftest import LONGEST_FIRST, TESTS

    missing = [name for name in LONGEST_FIRST if not (TESTS / name).is_file()]
    assert missing == [], missing
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
