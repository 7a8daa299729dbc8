"""ASGI middleware in front of Gradio's routes: what a public demo must refuse or clean up
that Gradio itself lets through.

- **No server-side fetches from file inputs.** A client may send a file input as FileData
  ``{"path": "http://..."}``; Gradio then downloads it itself, with no size or time limit of
  ours, even when URL input is off. Every JSON request body is read (at most
  ``MAX_JSON_BODY_BYTES``) and refused when a ``path`` in it is a URL. Audio from a URL
  comes only through ``/fetch_url``, behind ``webui.serving.url_input``.
- **Uploads leave nothing behind** (``webui.serving.uploads``), and a part without a file name is a
  400 that says so, not a 500.
- **The temp root exists** before any request that may write (``webui.serving.storage.ensure``).
- **With a login set**: ``/gradio_api/cancel``, ``/gradio_api/reset`` and Gradio's heartbeat need it
  too, and ``/login`` backs off per client after a few wrong passwords (``webui.serving.throttle``).
- **Same origin** for every state-changing request (POST, PUT, PATCH, DELETE) a browser page sends:
  its ``Origin`` must be the app's own or the operator's public origin, compared whole
  (``webui.serving.origins``); the Live WebSocket checks the same rule.
- **Per-client limits** on every event that enters the queue (``webui.serving.limits``): jobs at
  once per queue, a rate, and results left unread.
- **Files** (``/gradio_api/file=...``, GET and HEAD) are answered by ``webui.serving.files``, never
  by Gradio's file route: only the app's own folders, media inline and everything else as a
  download, byte ranges answered correctly or 416.
- Routes of Gradio this app does not use and that do work for anyone who posts
  (``/gradio_api/process_recording`` runs ffmpeg on any video) answer 404.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from http.cookies import CookieError, SimpleCookie
from pathlib import Path

from core.units import MIB
from webui.serving import files, json_text, storage, uploads
from webui.serving.limits import ClientLimits, Refusal, forget_call
from webui.serving.origins import OriginPolicy
from webui.serving.throttle import LoginThrottle, client_key, retry_after_header

logger = logging.getLogger(__name__)

UPLOAD_PATHS = frozenset({"/gradio_api/upload", "/gradio_api/upload/"})
LOGIN_PATHS = frozenset({"/login", "/login/"})
SIGNED_IN_PATHS = frozenset({"/gradio_api/cancel", "/gradio_api/reset", "/gradio_api/reset/"})
SIGNED_IN_PREFIXES = ("/gradio_api/heartbeat/",)  # Gradio answers its heartbeat without the login
JOIN_PATH = "/gradio_api/queue/join"
CALL_PREFIX = "/gradio_api/call/"  # POST .../call/<name> queues an event; GET .../call/<name>/<id> reads it
UNUSED_PATHS = frozenset({"/gradio_api/process_recording"})
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})  # methods a foreign page may not send
MAX_JSON_BODY_BYTES = MIB  # API request bodies are small JSON; file contents go through /upload
MAX_JSON_DEPTH = 64  # nesting walked when looking for file paths
_REMOTE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*:/")  # any scheme://..., http(s) and others
_FORM_TYPES = (b"multipart/form-data", b"application/x-www-form-urlencoded")


def _header(scope, name: bytes) -> bytes:
    for key, value in scope.get("headers") or ():
        if key == name:
            return value
    return b""


def login_required(app) -> bool:
    return getattr(app, "auth", None) is not None or getattr(app, "auth_dependency", None) is not None


def signed_in(scope) -> bool:
    """True when the app has no login, or the request carries a valid Gradio session cookie."""
    app = scope.get("app")
    if not login_required(app):
        return True
    if getattr(app, "auth_dependency", None) is not None:
        from starlette.requests import Request

        return app.auth_dependency(Request(scope)) is not None
    try:
        cookies = SimpleCookie(_header(scope, b"cookie").decode("latin-1"))
    except CookieError:
        return False
    for name in (
        f"access-token-{app.cookie_id}",
        f"access-token-unsecure-{app.cookie_id}",
    ):
        if name in cookies and cookies[name].value in app.tokens:
            return True
    return False


def remote_file_path(value, depth: int = 0) -> str | None:
    """The first file ``path`` in a decoded JSON body that is a URL, or None."""
    if depth > MAX_JSON_DEPTH:
        return "(nested too deep to check)"
    if isinstance(value, dict):
        path = value.get("path")
        if isinstance(path, str) and _REMOTE.match(path):
            return path
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        found = remote_file_path(item, depth + 1)
        if found:
            return found
    return None


async def _respond(send, status: int, text: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": text, "detail": text}).encode()
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive, limit: int) -> bytes | None:
    """The whole request body, or None when it is larger than ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive):
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


class Guard:
    """The middleware; ``temp_root`` is the app's one temp root (``webui.serving.storage``)."""

    def __init__(
        self,
        app,
        temp_root: Path,
        throttle: LoginThrottle | None = None,
        serve_roots: tuple[Path, ...] = (),
        limits: ClientLimits | None = None,
        trusted_proxies: frozenset[str] = frozenset(),
        max_temp_bytes: int | None = None,
        origins: OriginPolicy | None = None,
    ):
        self.app = app
        self.temp_root = Path(temp_root)
        self.serve_roots = tuple(serve_roots)  # servable besides request folders and Gradio's cache (examples)
        self.throttle = throttle or LoginThrottle()
        self.limits = limits or ClientLimits()
        self.trusted = frozenset(trusted_proxies)  # proxies whose X-Real-IP names the client
        self.max_temp_bytes = max_temp_bytes  # uploads are refused while the temp root holds more
        self.origins = origins or OriginPolicy(trusted=self.trusted)  # which pages may change state
        uploads.install()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        if path in UNUSED_PATHS:
            return await _respond(send, 404, "Not found.")
        if method in STATE_CHANGING and not self.origins.allows(scope):
            logger.warning("refused %s %s: %s", method, path, self.origins.refusal(scope))
            return await _respond(
                send,
                403,
                "This request came from another site's page; open the workbench at its own address "
                "(the operator sets --public-origin when it is served behind a proxy).",
            )
        if (path in SIGNED_IN_PATHS or path.startswith(SIGNED_IN_PREFIXES)) and not signed_in(scope):
            return await _respond(send, 401, "Sign in first.")
        if method in ("GET", "HEAD") and files.route_path(path) is not None:
            if not signed_in(scope):
                return await _respond(send, 401, "Sign in first.")
            return await files.serve(scope, receive, send, self.temp_root, self._serve_roots(scope))
        if method == "GET" and path.startswith(CALL_PREFIX) and path.count("/") >= 4:
            return await self._read_call(scope, receive, send, path.rstrip("/").rsplit("/", 1)[-1])
        if method not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        storage.ensure(self.temp_root)  # a /tmp cleaner may have removed it
        if path in LOGIN_PATHS:
            return await self._login(scope, receive, send)
        if path in UPLOAD_PATHS:
            if self.max_temp_bytes is not None and storage.used_bytes(self.temp_root) > self.max_temp_bytes:
                logger.error("upload refused: the temp folder %s is over its cap", self.temp_root)
                return await _respond(send, 507, "The server's temporary space is full; try again in a few minutes.")
            return await self._upload(scope, receive, send)
        content_type = _header(scope, b"content-type").split(b";")[0].strip().lower()
        if content_type in _FORM_TYPES:
            return await self.app(scope, receive, send)
        declared = _header(scope, b"content-length")
        if declared.isdigit() and int(declared) > MAX_JSON_BODY_BYTES:
            return await _respond(
                send,
                413,
                f"Request bodies are limited to {MAX_JSON_BODY_BYTES >> 10} KiB; "
                "upload files through /gradio_api/upload.",
            )
        body = await _read_body(receive, MAX_JSON_BODY_BYTES)
        if body is None:
            return await _respond(
                send,
                413,
                f"Request bodies are limited to {MAX_JSON_BODY_BYTES >> 10} KiB.",
            )
        try:
            decoded = json_text.loads(body) if body else None
            remote = remote_file_path(decoded)
        except (ValueError, RecursionError):
            decoded, remote = None, None  # not JSON: Gradio answers it (422)
        if remote:
            logger.warning("refused a file input given as a URL (%s) on %s", remote[:200], path)
            return await _respond(
                send,
                400,
                "File inputs take uploaded files only, not URLs: upload the file "
                "first (POST /gradio_api/upload), or use /fetch_url where the server allows it.",
            )
        if path == JOIN_PATH or path.startswith(CALL_PREFIX):
            return await self._queue(scope, _replay(body, receive), send, decoded)
        await self.app(scope, _replay(body, receive), send)

    async def _read_call(self, scope, receive, send, event_id: str) -> None:
        """A ``/gradio_api/call`` result being read: once it has been sent whole, Gradio's records
        of that call (its session above all) are dropped (``limits.forget_call``)."""
        self.limits.read(scope, event_id, self.trusted)
        finished = False

        async def watch(message):
            nonlocal finished
            if message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                finished = finished or b"event: complete" in chunk or b"event: error" in chunk
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if finished:
                blocks = getattr(scope.get("app"), "get_blocks", lambda: None)()
                if blocks is not None:
                    await _forget_when_done(blocks, event_id)

    async def _queue(self, scope, receive, send, body) -> None:
        """An event joining Gradio's queue: admitted by the per-client limits, or 429."""
        path = scope["path"]
        blocks = getattr(scope.get("app"), "get_blocks", lambda: None)()
        queue = getattr(blocks, "_queue", None)
        fns = getattr(blocks, "fns", {}) or {}
        simple = path.startswith(CALL_PREFIX)
        if simple:
            name = path[len(CALL_PREFIX) :].strip("/")
            fn = next((f for f in fns.values() if f.api_name == name), None)
        else:
            fn = fns.get(body.get("fn_index")) if isinstance(body, dict) else None
        if fn is None or queue is None:  # Gradio says what is wrong with the request
            return await self.app(scope, receive, send)
        ticket = self.limits.admit(scope, fn, queue, self.trusted, simple)
        if isinstance(ticket, Refusal):
            logger.warning("refused %s from %s: %s", fn.api_name, client_key(scope, self.trusted), ticket.text)
            wait = {"Retry-After": retry_after_header(ticket.retry_after_s)} if ticket.retry_after_s else None
            return await _respond(send, ticket.status, ticket.text, wait)
        try:
            await self._join(scope, receive, send, simple)
        finally:
            self.limits.joined(ticket)

    async def _join(self, scope, receive, send, simple: bool) -> None:
        if not simple:
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []

        async def note(message):
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        event_id = json.loads(b"".join(chunks)).get("event_id")
                    except (ValueError, AttributeError):
                        event_id = None
                    if event_id:
                        self.limits.made(scope, str(event_id), self.trusted)
            await send(message)

        await self.app(scope, receive, note)

    def _serve_roots(self, scope) -> tuple[Path, ...]:
        """Gradio's upload/output cache (where it copies every output and upload) and ours."""
        app = scope.get("app")
        cache = getattr(app, "uploaded_file_dir", None)
        return (*([Path(cache)] if cache else []), *self.serve_roots)

    async def _upload(self, scope, receive, send):
        started = False

        async def watch(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await uploads.tracked(self.app, scope, receive, watch, storage.tmp_dir(self.temp_root))
        except TypeError:  # Gradio's "File is not an instance of GradioUploadFile": a part without filename=
            if started:
                raise
            await _respond(
                send,
                400,
                'Each "files" part needs a file name: Content-Disposition: form-data; '
                'name="files"; filename="clip.wav".',
            )
        except OSError as e:
            if started or not storage.is_disk_full(e, self.temp_root):
                raise
            logger.error("upload refused: the disk under %s is full (%s)", self.temp_root, e)
            await _respond(send, 507, "The server's disk is full; try again later.")

    async def _login(self, scope, receive, send):
        client = client_key(scope, self.trusted)
        wait_s = self.throttle.retry_after_s(client)
        if wait_s > 0:
            return await _respond(
                send,
                429,
                f"Too many wrong passwords; wait {retry_after_header(wait_s)} s.",
                {"Retry-After": retry_after_header(wait_s)},
            )

        async def note(message):
            if message["type"] == "http.response.start":
                if message["status"] == 200:
                    self.throttle.succeeded(client)
                elif message["status"] in (400, 401):
                    self.throttle.failed(client)
                    logger.warning("wrong login from %s", client)
            await send(message)

        await self.app(scope, receive, note)


FORGET_TRIES = 50  # a read call's job leaves Gradio's running list moments after its result is sent
FORGET_EVERY_S = 0.1


async def _forget_when_done(blocks, event_id: str) -> None:
    """Drop a read call's records once its job has left Gradio's queue (tried for ~5 s; a job still
    listed then keeps its records, and a warning says so)."""
    for _ in range(FORGET_TRIES):
        if forget_call(blocks, event_id):
            return
        await asyncio.sleep(FORGET_EVERY_S)
    logger.warning(
        "call %s still listed as running %.0f s after its result was read", event_id, FORGET_TRIES * FORGET_EVERY_S
    )
