"""``pip install .`` gives a complete package: every subpackage and data file, working console
scripts, run from outside the checkout.

How the dependencies are found without downloading torch again: the fresh venv gets the package
alone (``--no-deps``), and a ``.pth`` file in it adds the site-packages of the environment running
the tests (``site.addsitedir``). The test is about the package's *contents*: a module or data file
that the wheel leaves out is missing in the fresh venv whatever the dependencies are, and the
venv's own site-packages come first, so ``core`` and ``webui`` are imported from the installed copy
(checked), never from the checkout (cwd is a temporary folder, the checkout is not on ``sys.path``).
The build itself runs as ``pip install .`` does anywhere: in an isolated environment with the
setuptools that ``[build-system]`` asks for (from pip's cache, or the registry the first time).
The declared dependencies are checked against the requirements files they come from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = (
    "requirements.txt",
    "requirements-judging.txt",
    "requirements-dataset.txt",
    "requirements-training.txt",
    "requirements-test.txt",
)
DATA = ("webui/locales", "webui/static", "webui/assets", "core/model/reference-config.json")  # package data

CHECK = r"""
import json, sys
from importlib import metadata
from pathlib import Path
import core.doctor, webui.app  # the issue's check: both import from the installed copy
import core
from core.model.checkpoints import REFERENCE_CONFIG, full_config
from webui import i18n
from webui.options import ASSETS, UiOptions
site = Path(sys.argv[1]).resolve()
out = {
    "core": core.__file__, "webui": webui.app.__file__, "version": core.__version__,
    "dist_version": metadata.version("codec-workbench"), "requires": metadata.requires("codec-workbench"),
    "reference": str(REFERENCE_CONFIG), "encoder_layers": full_config().encoder_config.num_hidden_layers,
    "languages": sorted(i18n.catalogues()), "intro": i18n.text("app.intro", "zh-CN")[:20],
    "examples": [str(p) for p in UiOptions().examples], "assets": str(ASSETS),
    "files": sorted(str(p.relative_to(site)) for p in site.joinpath("core").rglob("*") if p.is_file())
    + sorted(str(p.relative_to(site)) for p in site.joinpath("webui").rglob("*") if p.is_file()),
}
print(json.dumps(out))
"""


def _requirement_lines(name: str) -> list[str]:
    lines = (ROOT / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_requirement_files_hold_plain_requirement_lines():
    """setuptools reads them for pyproject's dynamic dependencies: no ``-r``, no options, no comment
    after a requirement (it would not parse), each a valid requirement."""
    from packaging.requirements import Requirement

    for name in REQUIREMENTS:
        for line in _requirement_lines(name):
            assert not line.startswith("-"), f"{name}: {line!r}: pip options are not read by pyproject"
            assert "#" not in line, f"{name}: {line!r}: put the comment on its own line"
            Requirement(line)


def _tracked_tree(dest: Path) -> Path:
    """The checkout's files as git sees them (tracked, or new and not ignored), copied to ``dest``,
    so the build neither writes into the checkout nor picks up ignored files (.venv, logs)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        source = ROOT / raw.decode()
        if source.is_file():
            (dest / raw.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / raw.decode())
    return dest


@pytest.mark.slow  # a wheel build and three interpreter starts importing torch and gradio: ~40 s on 2 quiet cores
def test_pip_install_gives_a_complete_package_that_runs_outside_the_checkout(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to know which files are the project's")
    source = _tracked_tree(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = sysconfig.get_paths()["purelib"]  # where torch, gradio, ... are installed for this run
    (site / "zz_test_dependencies.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(source)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def run(*argv: str) -> subprocess.CompletedProcess:
        done = subprocess.run(argv, cwd=outside, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{argv}: {done.stderr[-3000:]}"
        return done

    assert "tokenize" in run(str(venv / "bin" / "codec"), "--help").stdout
    assert "--temp-dir" in run(str(venv / "bin" / "codec-workbench"), "--help").stdout
    facts = json.loads(run(str(python), "-c", CHECK, str(site)).stdout)

    for module in ("core", "webui"):  # imported from the installed copy
        assert Path(facts[module]).resolve().is_relative_to(site.resolve()), facts[module]
    import core

    assert facts["version"] == facts["dist_version"] == core.__version__  # one version source
    assert facts["encoder_layers"] > 0 and Path(facts["reference"]).resolve().is_relative_to(site.resolve())
    assert facts["languages"] == ["en", "zh-CN"] and facts["intro"].startswith("# 编解码器工作台")
    assert facts["examples"] and all(Path(p).resolve().is_relative_to(site.resolve()) for p in facts["examples"])

    installed = set(facts["files"])
    expected = {
        p.relative_to(ROOT).as_posix()
        for p in list((ROOT / "core").rglob("*.py")) + list((ROOT / "webui").rglob("*.py"))
        if (source / p.relative_to(ROOT)).exists()  # the project's files, not stray ones
    }
    for data in DATA:
        path = source / data
        expected |= {p.relative_to(source).as_posix() for p in ([path] if path.is_file() else path.rglob("*"))}
    expected = {p for p in expected if (source / p).is_file()}
    assert not expected - installed, f"left out of the package: {sorted(expected - installed)}"

    declared = {_key(r) for r in facts["requires"]}
    for name in REQUIREMENTS:
        for line in _requirement_lines(name):
            assert _key(line) in declared, f"{name}: {line} is not among the package's dependencies"


def _key(requirement: str) -> tuple:
    """A requirement without its extra marker, comparable however its specifiers were ordered."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    r = Requirement(requirement.split(";")[0])
    return canonicalize_name(r.name), frozenset(r.extras), frozenset(str(s) for s in r.specifier)
