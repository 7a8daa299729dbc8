"""Per-request output folders under one temp root for the whole app (``webui.serving.storage``).

Every request gets a fresh folder (``tempfile.mkdtemp``), so two requests never share a
file name and nothing a user gave us is ever overwritten. Folders older than ``max_age_s``
are deleted whenever a new one is made.

The disk cap lives here, in the one place every request that writes passes:
``new_dir`` refuses a new folder while the temp root holds more than ``max_bytes``
(``--max-temp-mb``), after removing request folders untouched for ``EVICT_AFTER_S`` (oldest
first); uploads check the same cap (``webui.serving.guard``). Each job's own output is bounded by
the duration limits (and the ladder's and the blind test's), so the cap is overshot by at most
one job.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path

from core.units import MIB
from webui.i18n import TranslatedError
from webui.jobs.common import REQUEST_PREFIX
from webui.serving import storage

logger = logging.getLogger(__name__)

DEFAULT_MAX_AGE_S = 3600.0  # seconds a request's files stay downloadable
DEFAULT_MAX_TEMP_MB = 8192.0  # MiB the temp root may hold before new work is refused (--max-temp-mb)
EVICT_AFTER_S = 600.0  # over the cap, request folders untouched this long go first (oldest first)
PREFIX = REQUEST_PREFIX  # folder name prefix; only folders with it are ever deleted


class Workspace:
    """Makes request folders under ``root`` and deletes the old ones."""

    def __init__(
        self,
        root: Path | str | None = None,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        max_bytes: int = int(DEFAULT_MAX_TEMP_MB * MIB),
    ):
        if root is None:
            root = storage.default_root()
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_age_s = max_age_s
        self.max_bytes = max_bytes

    def new_dir(self, kind: str) -> Path:
        """A new, empty folder for one request (``kind`` is only part of the name); refused with
        ``hardening.temp_full`` while the temp root is over its cap."""
        self.cleanup()
        self.make_room()
        self.root.mkdir(parents=True, exist_ok=True)  # a /tmp cleaner may have deleted it
        return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=self.root))

    def make_room(self, now: float | None = None) -> None:
        """Under the cap, or old request folders removed until it is, or TranslatedError."""
        if storage.used_bytes(self.root) <= self.max_bytes:
            return
        now = time.time() if now is None else now
        folders = []
        for folder in self.root.glob(f"{PREFIX}*"):
            try:
                folders.append((folder.stat().st_mtime, folder))
            except FileNotFoundError:
                continue
        for mtime, folder in sorted(folders):
            if now - mtime < EVICT_AFTER_S:
                break
            shutil.rmtree(folder, ignore_errors=True)
            storage.forget_usage(self.root)
            logger.warning("temp folder over its cap: removed %s early", folder.name)
            if storage.used_bytes(self.root, fresh_s=0) <= self.max_bytes:
                return
        used = storage.used_bytes(self.root, fresh_s=0)
        if used > self.max_bytes:
            logger.error(
                "temp folder %s holds %.0f MiB, over its %.0f MiB cap",
                self.root,
                used / MIB,
                self.max_bytes / MIB,
            )
            raise TranslatedError("hardening.temp_full", used=round(used / MIB), cap=round(self.max_bytes / MIB))

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
        removed += storage.sweep_gradio(self.root, self.max_age_s, now)
        if removed:
            logger.info("removed %d request folders and temp files older than %.0f s", removed, self.max_age_s)
        return removed
