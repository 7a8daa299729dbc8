"""The package's face: ``from core import Engine, Settings, load_audio, ...`` gives the objects of
their modules, on first use only: ``import core`` (and so ``python -m core --help``) loads none."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import core


def test_import_core_loads_no_heavy_module():
    probe = "import sys, core; print(sorted(m for m in ('torch', 'numpy', 'core.model.engine') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", [n for n in core.__all__ if n != "__version__"])
def test_every_public_name_is_its_modules_object(name):
    module = importlib.import_module(core._PUBLIC[name])
    assert getattr(core, name) is getattr(module, name)
    assert name in dir(core)


def test_an_unknown_name_says_which_exist():
    with pytest.raises(AttributeError, match="public names: Engine, Settings"):
        core.Engnie  # noqa: B018 - the look-up is the test
