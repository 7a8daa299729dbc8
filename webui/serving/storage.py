"""The one temp root that holds every file the app or Gradio writes, and its health.

Layout under the root (``--temp-dir`` / ``CODEC_TEMP_DIR``)::

    req-*/    one folder per request (``webui.serving.workspace``), deleted after ``--keep-files-s``
    gradio/   Gradio's caches: finished uploads, copies of outputs; one ``pid-<N>/`` per process
              (GRADIO_TEMP_DIR), because Gradio names a cached file by its content's hash and each
              app deletes every file it cached when it stops: replicas sharing one cache folder
              deleted the sample clip another replica's visitor had just uploaded
    tmp/      the process's ``tempfile`` folder (TMPDIR): uploads while they stream in

A /tmp cleaner may delete the root while the app runs, so :func:`ensure` recreates it (the
guard calls it before every request that writes); :func:`problem` says why the app cannot
write there (gone for good, read-only, disk nearly full), for /ready and error messages.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from core.settings import default_temp_root
from core.units import MIB

logger = logging.getLogger(__name__)

GRADIO_DIR = "gradio"  # Gradio's upload/output caches, under the root
PROCESS_PREFIX = "pid-"  # one cache per process under GRADIO_DIR
TMP_DIR = "tmp"  # tempfile.tempdir of the process, under the root
MIN_FREE_MIB = 64.0  # below this much free disk under the root the app reports itself not ready
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}  # "no space left", "quota exceeded"


def default_root() -> Path:
    """The temp root when none is configured (``core.settings.default_temp_root``)."""
    return default_temp_root()


def gradio_dir(root: Path) -> Path:
    return Path(root) / GRADIO_DIR


def process_gradio_dir(root: Path, pid: int | None = None) -> Path:
    """This process's own Gradio cache under ``root`` (see the layout above)."""
    return gradio_dir(root) / f"{PROCESS_PREFIX}{os.getpid() if pid is None else pid}"


def tmp_dir(root: Path) -> Path:
    return Path(root) / TMP_DIR


def ensure(root: Path) -> None:
    """Create the root and its fixed folders if any is missing (cheap when all exist)."""
    for folder in (Path(root), gradio_dir(root), tmp_dir(root)):
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            logger.warning("temp folder %s was missing; recreated it", folder)


def use_for_process(root: Path) -> None:
    """Point Gradio's cache and every ``tempfile`` user of this process (and its child
    processes, e.g. ffmpeg) under ``root``. Call before the Blocks are built: Gradio reads
    GRADIO_TEMP_DIR when it makes its components and its app."""
    ensure(root)
    cache = process_gradio_dir(root)
    cache.mkdir(exist_ok=True)
    os.environ["GRADIO_TEMP_DIR"] = str(cache)
    os.environ["TMPDIR"] = str(tmp_dir(root))
    tempfile.tempdir = str(tmp_dir(root))
    # Some Gradio modules copied GRADIO_TEMP_DIR into a constant when imported (create_app
    # makes a folder there, the screen-recording route writes there): point them here too.
    for name in ("gradio.route_utils", "gradio.routes", "gradio.screen_recording_utils", "gradio.mcp"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "DEFAULT_TEMP_DIR"):
            module.DEFAULT_TEMP_DIR = str(cache)  # type: ignore[attr-defined]


def free_mib(root: Path) -> float:
    return shutil.disk_usage(root).free / MIB


def problem(root: Path, min_free_mib: float = MIN_FREE_MIB) -> str | None:
    """Why the app cannot write its files under ``root`` right now, or None when it can.
    A missing root is recreated first (not a problem unless that fails)."""
    try:
        ensure(root)
    except OSError as e:
        return f"the temp folder {root} is missing and cannot be created ({e.strerror or e}); check --temp-dir"
    if not os.access(root, os.W_OK | os.X_OK):
        return f"the temp folder {root} is not writable; fix its permissions or choose another --temp-dir"
    free = free_mib(root)
    if free < min_free_mib:
        return f"the disk of the temp folder {root} is full ({free:.0f} MiB free); free some space"
    return None


def is_disk_full(error: BaseException, root: Path, min_free_mib: float = MIN_FREE_MIB) -> bool:
    """True when ``error`` (or what caused it) is a full disk, or the disk under ``root`` is
    nearly full (libraries that hit ENOSPC often raise something vaguer, e.g. soundfile's
    AssertionError on a short write)."""
    seen: BaseException | None = error
    for _ in range(10):  # bounded walk down the cause chain
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.errno in _FULL_ERRNOS:
            return True
        seen = seen.__cause__ or seen.__context__
    try:
        return free_mib(root) < min_free_mib
    except OSError:
        return False


USAGE_FRESH_S = 2.0  # a measured size of the root is reused this long (a walk of thousands of files)
_usage: dict[str, tuple[float, int]] = {}  # root -> (when measured, bytes)


def used_bytes(root: Path, fresh_s: float = USAGE_FRESH_S) -> int:
    """Bytes of every file under ``root`` (request folders, Gradio's cache, tmp/), measured at most
    every ``fresh_s`` seconds."""
    key, now = str(root), time.monotonic()
    seen = _usage.get(key)
    if seen is not None and now - seen[0] < fresh_s:
        return seen[1]
    total = 0
    for folder, _dirs, names in os.walk(root):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:  # removed meanwhile
                continue
    _usage[key] = (now, total)
    return total


def forget_usage(root: Path) -> None:
    """Measure ``root`` afresh next time (after folders were removed)."""
    _usage.pop(str(root), None)


def sweep_gradio(root: Path, max_age_s: float, now: float | None = None) -> int:
    """Delete the Gradio caches of processes that are gone (a stop that was not clean leaves its
    files) and untouched for ``max_age_s``; return how many went. Another PID namespace (a container
    sharing the folder) may hold a live process this one cannot see: the age guards its cache."""
    now = time.time() if now is None else now
    removed = 0
    try:
        entries = list(gradio_dir(root).glob(f"{PROCESS_PREFIX}*"))
    except FileNotFoundError:
        return 0
    for entry in entries:
        try:
            pid = int(entry.name[len(PROCESS_PREFIX) :])
        except ValueError:
            continue
        try:
            if _alive(pid) or now - entry.lstat().st_mtime <= max_age_s:
                continue
        except FileNotFoundError:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def sweep_tmp(root: Path, max_age_s: float, now: float | None = None) -> int:
    """Delete entries of the ``tmp`` folder untouched for ``max_age_s`` (what a library left
    behind); return how many went."""
    now = time.time() if now is None else now
    removed = 0
    try:
        entries = list(tmp_dir(root).iterdir())
    except FileNotFoundError:
        return 0
    for entry in entries:
        try:
            if now - entry.lstat().st_mtime <= max_age_s:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed += 1
        except FileNotFoundError:
            continue
    return removed
