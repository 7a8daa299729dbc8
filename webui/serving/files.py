"""Gradio's file routes (``/gradio_api/file=<path>`` and its older spellings), answered here.

The guard sends every GET and HEAD of these routes to :func:`serve`, so Gradio's own file
response never runs. Two reasons:

- **Byte ranges.** Gradio 6.17's ``RangedFileResponse`` clamps a range's end to the file's size
  instead of size - 1, so ``Range: bytes=0-65535`` on a 48,080-byte WAV promises one byte the file
  does not have: the loop that sends it reads empty chunks for ever, at 100 % CPU, after the client
  has gone (``gradio/ranged_response.py``, ``OpenRange.clamp``). Multi-range or 5,000-digit ranges
  gave a 500. Here Starlette's ``FileResponse`` answers: a satisfiable range gets exactly its bytes
  (206), one past the end gets 416 with ``Content-Range: bytes */size``, several get a multipart
  206, and a malformed one a 400.
- **Stored XSS.** Gradio served any file under ``allowed_paths`` inline with the type its name
  suggests, and the temp root (an allowed path) holds its upload cache: an uploaded ``.html`` or
  ``.svg`` ran as a page of the app's origin. Here only the app's own folders are servable
  (request folders ``req-*`` under the temp root, Gradio's upload/output cache, the example
  clips); only audio and raster images are shown inline, under their real type; anything else is
  a download (``application/octet-stream``, ``attachment``). Every answer carries
  ``X-Content-Type-Options: nosniff`` and a sandboxing ``Content-Security-Policy``, so even a file
  that lies about its type cannot run script in the app's origin.
"""

from __future__ import annotations

import logging
import os
import stat
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from starlette.responses import FileResponse

from webui.serving.workspace import PREFIX

logger = logging.getLogger(__name__)

ROUTES = ("/gradio_api/file=", "/file=", "/gradio_api/file/", "/file/")  # Gradio's file route and its old spellings
INLINE_TYPES = {  # suffix -> media type shown in the page; every other file is a download
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".flac": "audio/flac",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    ".webm": "audio/webm",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
}
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",  # the browser believes our type, never the bytes
    # a document made from this response runs no script and has an origin of its own
    "Content-Security-Policy": "sandbox; default-src 'none'; img-src 'self'; media-src 'self'",
}
MAX_PATH_CHARS = 4096  # longer paths are refused before touching the file system


def route_path(path: str) -> str | None:
    """The file path asked for by a request to one of Gradio's file routes, or None for other routes."""
    for prefix in ROUTES:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return None


def allowed(path: Path, temp_root: Path, roots: tuple[Path, ...]) -> bool:
    """True when ``path`` (resolved) lies in a request folder under ``temp_root`` or under one of
    ``roots`` (Gradio's upload/output cache, the example clips)."""
    root = Path(os.path.realpath(temp_root))
    try:
        first = path.relative_to(root).parts
    except ValueError:
        first = ()
    if len(first) >= 2 and first[0].startswith(PREFIX):
        return True
    return any(path.is_relative_to(os.path.realpath(r)) for r in roots)


def media_type(path: Path) -> tuple[str, str]:
    """(Content-Type, disposition) for ``path``: inline media, or a download."""
    kind = INLINE_TYPES.get(path.suffix.lower())
    return (kind, "inline") if kind else ("application/octet-stream", "attachment")


async def _refuse(send, status: int, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve(scope, receive, send, temp_root: Path, roots: tuple[Path, ...]) -> None:
    """Answer a GET or HEAD of a file route: the file (whole or ranged), or 403 / 404."""
    raw = route_path(scope["path"]) or ""
    if not raw or len(raw) > MAX_PATH_CHARS or "\0" in raw or "://" in raw:
        return await _refuse(send, 403, "File not allowed.")
    path = Path(os.path.realpath(os.path.abspath(raw)))  # symlinks followed: the real place decides
    if not allowed(path, temp_root, roots):
        logger.info("refused to serve %s (outside the app's folders)", raw[:300])
        return await _refuse(send, 403, "File not allowed.")
    gone = "This file is gone (result files are kept for a limited time)."
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # before opening: a FIFO's open would block
            return await _refuse(send, 403, "File not allowed.")
        # Opened before anything is sent: a file removed after this (a blind test's next X, an
        # expired result) is still sent whole.
        held = await anyio.to_thread.run_sync(open, path, "rb")
    except OSError:
        return await _refuse(send, 404, gone)
    try:
        info = os.fstat(held.fileno())
        if not stat.S_ISREG(info.st_mode):
            return await _refuse(send, 403, "File not allowed.")
        kind, disposition = media_type(path)
        response = _HeldFileResponse(
            held,
            path,
            headers=SECURITY_HEADERS,
            media_type=kind,
            filename=path.name,
            stat_result=info,
            content_disposition_type=disposition,
        )
        await response(scope, receive, send)
    finally:
        held.close()


class _HeldFileResponse(FileResponse):
    """Starlette's ``FileResponse`` (ranges, HEAD, multipart) reading the file :func:`serve` holds
    open instead of opening the path again after the headers are out: between the two, a removed
    file gave a 500 and a traceback halfway through a 206 (seen in a loaded test run)."""

    def __init__(self, held, path: Path, **kwargs) -> None:
        super().__init__(path, **kwargs)
        self._held = held

    @asynccontextmanager
    async def _open_file(self):
        file = anyio.wrap_file(os.fdopen(os.dup(self._held.fileno()), "rb"))
        try:
            yield file
        finally:
            with anyio.CancelScope(shield=True):
                await file.aclose()
