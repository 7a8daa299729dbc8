"""core/ is the engine: importing any of its modules pulls in no UI (gradio, webui)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"


def test_importing_every_core_module_leaves_gradio_out():
    modules = sorted(f"core.{p.stem}" for p in CORE.glob("*.py") if p.stem != "__main__")
    assert "core.engine" in modules and "core.audio" in modules
    code = (
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('gradio', 'webui')))"
    )
    # a fresh interpreter: this test session has imported gradio for the web UI tests already
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=CORE.parent, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
