"""core/ is the engine: importing any of its modules pulls in no UI (gradio, webui)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"


def test_importing_every_core_module_leaves_gradio_out():
    modules = sorted(
        ".".join(p.relative_to(CORE.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in CORE.rglob("*.py")
        if p.stem != "__main__"
    )
    assert "core.model.engine" in modules and "core.audio.files" in modules
    code = (
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('gradio', 'webui')))"
    )
    # a fresh interpreter: this test session has imported gradio for the web UI tests already
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=CORE.parent, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.slow  # a fresh interpreter importing transformers: ~13 s; make test runs it
def test_loading_the_tokenizer_classes_leaves_unused_frameworks_out():
    """scikit-learn is installed here (librosa needs it) and transformers would import it at import
    time; ``core.model.weights`` switches that off, and JAX/TensorFlow with transformers' own switches."""
    import importlib.util

    assert importlib.util.find_spec("sklearn") is not None, "the test needs scikit-learn installed to mean anything"
    code = (
        "import sys\nfrom core.model import weights\nweights.import_qwen_tts().Qwen3TTSTokenizer\n"
        "import transformers.generation.candidate_generator\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'sklearn', 'jax', 'tensorflow', 'pandas'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=CORE.parent, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
