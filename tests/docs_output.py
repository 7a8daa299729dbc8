"""What a test run may write into the repository: nothing, unless asked for. The docs' screenshots
(``docs/*.png``) and the figures a browser test measures (``bench/results/*.json``) are written only
under ``make screenshots`` (``DOCS_SCREENSHOTS=1``), so ``make test``, ``make test-slow`` and
``make test-long`` leave a fresh clone's ``git status`` clean. The tests take their screenshots and
check them either way; only the copy into the repository waits to be asked for."""

from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "DOCS_SCREENSHOTS"


def wanted() -> bool:
    """True under ``make screenshots`` (``DOCS_SCREENSHOTS=1``)."""
    return os.environ.get(VARIABLE) == "1"


def save_picture(source: Path, target: Path) -> bool:
    """``source`` as the docs' ``target`` in 256 colours (a third of the bytes, no visible change on a
    flat UI and colour-mapped plots), when asked for; True when written."""
    if not wanted():
        return False
    from PIL import Image

    target.parent.mkdir(exist_ok=True)
    image = Image.open(source).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(target, optimize=True)
    return True


def save_text(target: Path, text: str) -> bool:
    """A measured figure as ``target`` (under bench/results), when asked for; True when written."""
    if not wanted():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return True
