"""Per-request output folders under one temp root for the whole app (``webui.serving.storage``).

Every request gets a fresh folder (``tempfile.mkdtemp``), so two requests never share a
file name and nothing a user gave us is ever overwritten. Folders older than ``max_age_s``
are deleted whenever a new one is made.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path

from webui.serving import storage

logger = logging.getLogger(__name__)

DEFAULT_MAX_AGE_S = 3600.0  # seconds a request's files stay downloadable
PREFIX = "req-"  # folder name prefix; only folders with it are ever deleted


class Workspace:
    """Makes request folders under ``root`` and deletes the old ones."""

    def __init__(self, root: Path | str | None = None, max_age_s: float = DEFAULT_MAX_AGE_S):
        if root is None:
            root = storage.default_root()
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_age_s = max_age_s

    def new_dir(self, kind: str) -> Path:
        """A new, empty folder for one request (``kind`` is only part of the name)."""
        self.cleanup()
        self.root.mkdir(parents=True, exist_ok=True)  # a /tmp cleaner may have deleted it
        return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=self.root))

    def cleanup(self, now: float | None = None) -> int:
        """Delete request folders older than ``max_age_s``; return how many went."""
        now = time.time() if now is None else now
        removed = 0
        for folder in self.root.glob(f"{PREFIX}*"):
            try:
                if folder.is_dir() and now - folder.stat().st_mtime > self.max_age_s:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed += 1
            except FileNotFoundError:  # another request removed it first
                continue
        removed += storage.sweep_tmp(self.root, self.max_age_s, now)
        if removed:
            logger.info("removed %d request folders and temp files older than %.0f s", removed, self.max_age_s)
        return removed
