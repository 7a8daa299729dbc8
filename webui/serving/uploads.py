"""Uploads leave nothing behind when they fail or are aborted.

Gradio's multipart parser (``gradio.route_utils.GradioMultiPartParser``) streams each file
into ``NamedTemporaryFile(delete=False)`` in the process's temp folder, and deletes those
files only when *it* refuses the request: a client that disconnects mid-upload, or a body
the handler rejects afterwards, leaves them there forever. So the parser's file factory is
replaced by one that puts the files in the request's temp folder (under our root) and notes
them in a per-request list; :func:`tracked` runs an upload request and, when it has ended in
any way, deletes whatever it noted that is still there (a finished upload has been moved
into Gradio's cache by then, background copies included).
"""

from __future__ import annotations

import contextvars
import logging
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

# The files the current upload request has created: set by tracked(), read by _spool_file().
_current: contextvars.ContextVar[tuple[Path, list[str]] | None] = contextvars.ContextVar("upload_files", default=None)
_installed = False


def _spool_file(*args, **kwargs):
    """Gradio's NamedTemporaryFile call, in our temp folder, remembered for clean-up."""
    noted = _current.get()
    if noted is not None:
        kwargs.setdefault("dir", str(noted[0]))
    handle = tempfile.NamedTemporaryFile(*args, **kwargs)  # noqa: SIM115 - Gradio owns and closes it
    if noted is not None:
        noted[1].append(handle.name)
    return handle


def install() -> bool:
    """Route Gradio's upload spooling through :func:`_spool_file` (once per process). Returns
    False, with a warning, when this Gradio has no such hook (the sweep of the temp folder
    still removes leftovers, only later)."""
    global _installed
    if _installed:
        return True
    from gradio import route_utils

    if not hasattr(route_utils, "NamedTemporaryFile"):
        logger.warning("this Gradio spools uploads differently; aborted uploads are only removed by the sweep")
        return False
    route_utils.NamedTemporaryFile = _spool_file  # type: ignore[attr-defined]
    _installed = True
    return True


async def tracked(app, scope, receive, send, spool_dir: Path) -> None:
    """Run one upload request through ``app``; afterwards delete the spooled files it left."""
    from starlette.requests import ClientDisconnect

    files: list[str] = []
    token = _current.set((spool_dir, files))
    gone = False
    try:
        await app(scope, receive, send)
    except ClientDisconnect:  # the client hung up mid-upload: one line, not a traceback
        gone = True
    finally:
        _current.reset(token)
        left = [name for name in files if Path(name).exists()]
        for name in left:
            Path(name).unlink(missing_ok=True)
        if gone:
            client = (scope.get("client") or ("?", 0))[0]
            logger.info("upload from %s went away mid-request; removed %d partial file(s)", client, len(left))
        elif left:
            logger.info(
                "upload to %s ended early; removed %d partial file(s)",
                scope.get("path"),
                len(left),
            )
