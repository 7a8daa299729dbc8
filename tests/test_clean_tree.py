"""A test run leaves the tree as it found it: the docs' screenshots and the browser figures in
bench/results are written only under ``make screenshots`` (``DOCS_SCREENSHOTS=1``, tests/docs_output.py),
and that command runs every test file that saves one."""

from __future__ import annotations

import re
from pathlib import Path

from tests import docs_output

ROOT = Path(__file__).resolve().parent.parent


def _png(path: Path) -> Path:
    from PIL import Image

    Image.new("RGB", (8, 8), (40, 90, 200)).save(path)
    return path


def test_a_screenshot_reaches_the_docs_only_when_asked_for(tmp_path, monkeypatch):
    shot, target, figures = _png(tmp_path / "shot.png"), tmp_path / "docs" / "page.png", tmp_path / "results.json"
    monkeypatch.delenv(docs_output.VARIABLE, raising=False)
    assert not docs_output.save_picture(shot, target) and not target.exists()
    assert not docs_output.save_text(figures, "{}") and not figures.exists()
    monkeypatch.setenv(docs_output.VARIABLE, "1")
    assert docs_output.save_picture(shot, target) and target.stat().st_size > 0
    assert docs_output.save_text(figures, "{}\n") and figures.read_text() == "{}\n"


def test_make_screenshots_runs_every_test_file_that_saves_one():
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"SCREENSHOT_TESTS := \$\(addprefix tests/webui/,(.*?)\)\n", makefile, re.S)
    assert listed, "the Makefile's SCREENSHOT_TESTS list"
    named = set(listed.group(1).replace("\\", " ").split())
    saving = {
        path.name
        for path in (ROOT / "tests").rglob("test_*.py")
        if path.name not in {Path(__file__).name, "test_webui_browser.py"}  # this test; where _save_small lives
        and re.search(
            r"(?<!def )\b(_save_small|_save_if_legible|docs_output\.save_\w+)\(", path.read_text(encoding="utf-8")
        )
    }
    assert saving and saving <= named, f"add to SCREENSHOT_TESTS: {sorted(saving - named)}"
    assert all((ROOT / "tests" / "webui" / name).is_file() for name in named), "a listed file is gone"
