"""``/live/ws``: the Live tab's audio, both ways, over one WebSocket on the app's own port.

Why a WebSocket and not Gradio's streaming audio or FastRTC: docs/live.md (measured latency, and
FastRTC pins gradio<6). The page (webui/static/live.js) sends microphone blocks as they are captured,
the server pushes them through an engine live session (``core.model.live``) in a worker thread and
sends back, per completed frame, the codec's audio beside the 24 kHz input of the same frame (the
page switches between them at the same moment).

Messages. Page -> server: binary ``[float64 page clock ms][float32 samples, interleaved]``; text
``{"type": "stop"}``. Server -> page: text ``ready`` (slots, limits), ``error`` (a sentence in the
page's language; the socket then closes), ``done`` (the result id the Live tab shows, see
``webui.jobs.live``); binary ``[float64 page clock ms of the block][float64 compute ms][float64 lock
wait ms][float64 first frame][float32 input x n][float32 codec x n]``.

The work (what a block may be, when a session stops, what is saved) is ``webui.jobs.live``'s; this
module carries the messages. Bounds: the login and the origin rule (``webui.serving.origins``) guard it like every page route; a block longer than
``jobs.live.MAX_BLOCK_S`` is refused;
the session refuses input faster than real time and longer than its limit (``core.model.live``);
a socket quiet for ``IDLE_S`` (a tab that froze or vanished without closing) is closed, and any end
of the socket closes the session at once, so its slot and memory are free within ``IDLE_S``.

Every message is read as it arrives and timed (:class:`_Inbox`), so a block that then waits behind the
server's work counts as the server's lateness, not the client's. The inbox holds at most ``QUEUE_S``
of audio; past that the reader waits, and the socket's own backpressure holds the page.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import time

import anyio
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.routing import APIWebSocketRoute

from core.codec import FRAME_S
from core.errors import CodecError
from webui import i18n
from webui.i18n import TranslatedError
from webui.jobs import live
from webui.serving import json_text
from webui.serving.guard import signed_in
from webui.serving.limits import ClientLimits, Refusal
from webui.serving.origins import OriginPolicy
from webui.serving.throttle import client_key
from webui.serving.workspace import Workspace
from webui.views.words import codec_error_text

logger = logging.getLogger(__name__)

PATH = "/live/ws"
IDLE_S = 3.0  # a socket with no message for this long is closed, and its session with it
QUEUE_S = live.MAX_BEHIND_S + 1.0  # audio read ahead of the session's work, at most (then backpressure)


def live_routes(
    engine, workspace: Workspace, origins: OriginPolicy | None = None, limits: ClientLimits | None = None
) -> list[APIWebSocketRoute]:
    """The WebSocket route, to hand to Gradio's FastAPI app beside /health. ``origins``: which pages
    may open it (``webui.serving.origins``; default, the app's own origin only); ``limits``: the
    per-client limits the guard enforces on the queue (the same object: one count per client)."""
    app = FastAPI()
    policy = origins or OriginPolicy()
    client_limits = limits or ClientLimits()

    @app.websocket(PATH)
    async def live_ws(ws: WebSocket):
        await serve(ws, engine, workspace, policy, client_limits)

    return [route for route in app.routes if isinstance(route, APIWebSocketRoute)]


def _params(ws: WebSocket) -> tuple[int, int, str]:
    query = ws.query_params
    lang = query.get("lang") or i18n.DEFAULT_LANGUAGE
    lang = lang if lang in i18n.LANGUAGES else i18n.DEFAULT_LANGUAGE
    try:
        rate, channels = int(query.get("rate", "")), int(query.get("channels", "1"))
    except ValueError:
        rate, channels = 0, 0
    return rate, channels, lang


async def serve(ws: WebSocket, engine, workspace: Workspace, origins: OriginPolicy, limits: ClientLimits) -> None:
    if not signed_in(ws.scope) or not origins.allows(ws.scope):  # another site could use a visitor's cookie
        if signed_in(ws.scope):
            logger.warning("refused a live socket: %s", origins.refusal(ws.scope))
        await ws.close(code=4403)  # refused before anything is opened
        return
    rate, channels, lang = _params(ws)
    await ws.accept()
    ticket = limits.open_live(ws.scope, origins.trusted)
    if isinstance(ticket, Refusal):
        logger.warning("refused a live socket from %s: %s", client_key(ws.scope, origins.trusted), ticket.text)
        cap = limits.settings.live_sessions
        held = ticket.retry_after_s is None  # the cap (a rate refusal says how long to wait)
        await _error(ws, i18n.text("trust.live_per_client", lang, limit=cap) if held else ticket.text)
        return
    try:
        await _serve(ws, engine, workspace, rate, channels, lang)
    finally:
        limits.close_live(ticket)


async def _serve(ws: WebSocket, engine, workspace: Workspace, rate: int, channels: int, lang: str) -> None:
    try:
        live.check_format(rate, channels)
        session = await anyio.to_thread.run_sync(lambda: engine.live.open(rate, channels))
    except (live.LiveEnd, CodecError) as e:
        await _error(ws, _text(e, lang))
        return
    except Exception:  # noqa: BLE001 - whatever broke, the page gets a sentence, never a bare 1006
        logger.exception("live session could not open")
        await _error(ws, i18n.text("trust.live_failed", lang))
        return
    try:
        await ws.send_text(
            json.dumps(
                {
                    "type": "ready",
                    "in_use": engine.live.in_use,
                    "limit": engine.live.limit,
                    "max_s": session.max_s,
                    "packet_frames": engine.live.packet_frames(),  # frames encoded together: the codec's latency
                    "device": engine.device_label,
                }
            )
        )
        await _loop(ws, engine, workspace, live.LiveRun(session, rate, channels), lang)
    except WebSocketDisconnect:
        logger.info("live page went away after %.1f s of audio", session.input.seconds)
    except Exception:  # noqa: BLE001 - whatever broke, the page gets a sentence, never a bare 1006
        logger.exception("live session failed after %.1f s of audio", session.input.seconds)
        await _error(ws, i18n.text("trust.live_failed", lang))
    finally:
        session.close()  # at once, whatever ended the socket: the slot and the state are free


def _text(e: Exception, lang: str) -> str:
    """The sentence the page gets for what ended its session."""
    if isinstance(e, live.LiveEnd):
        return codec_error_text(e.cause, lang) if e.cause else i18n.text(e.key, lang, **e.params)
    return codec_error_text(e, lang)  # type: ignore[arg-type]


class _Inbox:
    """The socket's messages with their arrival times (``time.monotonic``), read by a task of their own
    while a block is worked on; at most ``cap_bytes`` of blocks held, then the reader waits."""

    def __init__(self, cap_bytes: int, frame_bytes: int):
        self.cap_bytes, self.frame_bytes, self.bytes = cap_bytes, frame_bytes, 0
        self._queue: collections.deque = collections.deque()
        self._ready, self._room = asyncio.Event(), asyncio.Event()
        self._room.set()

    async def read(self, ws: WebSocket) -> None:
        """Read until the socket ends (its disconnect message is queued too)."""
        while True:
            await self._room.wait()
            try:
                message = await ws.receive()
            except Exception:  # noqa: BLE001 - a socket that broke ends like one that closed
                message = {"type": "websocket.disconnect", "code": 1006}
            self._queue.append((message, time.monotonic()))
            self.bytes += len(message.get("bytes") or b"")
            if self.bytes >= self.cap_bytes:
                self._room.clear()
            self._ready.set()
            if message["type"] == "websocket.disconnect":
                return

    async def get(self) -> tuple[dict, float]:
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        message, arrived = self._queue.popleft()
        self.bytes -= len(message.get("bytes") or b"")
        if self.bytes < self.cap_bytes:
            self._room.set()
        return message, arrived

    def behind(self) -> bool:
        """At least a frame of audio waits here: the session fell behind and has to catch up."""
        return self.bytes >= self.frame_bytes


async def _loop(ws: WebSocket, engine, workspace: Workspace, run: live.LiveRun, lang: str) -> None:
    block_bytes_per_s = run.rate * run.channels * 4  # float32 samples
    inbox = _Inbox(int(QUEUE_S * block_bytes_per_s), int(FRAME_S * block_bytes_per_s))
    reader = asyncio.create_task(inbox.read(ws))
    try:
        await _work(ws, engine, workspace, run, lang, inbox)
    finally:
        reader.cancel()


async def _work(ws: WebSocket, engine, workspace: Workspace, run: live.LiveRun, lang: str, inbox: _Inbox) -> None:
    while True:
        try:
            message, arrived = await asyncio.wait_for(inbox.get(), timeout=IDLE_S)
        except TimeoutError:
            logger.warning("live page silent for %.0f s; closing its session", IDLE_S)
            await _error(ws, i18n.text("live.error.idle", lang, seconds=f"{IDLE_S:g}"))
            return
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        if message.get("text") is not None:
            try:
                command = json_text.loads(message["text"] or "{}")
            except ValueError:
                command = {}
            if isinstance(command, dict) and command.get("type") == "stop":
                await _finish(ws, engine, workspace, run, lang)
                return
            continue
        try:
            reply = await anyio.to_thread.run_sync(run.push, message.get("bytes") or b"", arrived)
        except live.LiveEnd as e:
            if e.keep:
                await _finish(ws, engine, workspace, run, lang, _text(e, lang))
            else:
                await _error(ws, _text(e, lang))
            return
        run.session.expect(inbox.behind())  # a job hands the model over until this session caught up
        if reply is not None:
            await ws.send_bytes(reply)


async def _finish(ws: WebSocket, engine, workspace: Workspace, run: live.LiveRun, lang: str, note: str | None = None):
    """Stop the session and save it as a round-trip result; tell the page its id."""
    try:
        folder = workspace.new_dir("live")
        done = await anyio.to_thread.run_sync(lambda: run.finish(engine, folder))  # removes the folder on failure
    except CodecError as e:
        await _error(ws, codec_error_text(e, lang))
        return
    except TranslatedError as e:  # the temp folder is full
        await _error(ws, e.in_language(lang))
        return
    await ws.send_text(json.dumps({**done, "note": note}))
    await ws.close()


async def _error(ws: WebSocket, message: str) -> None:
    try:
        await ws.send_text(json.dumps({"type": "error", "message": message}))
        await ws.close()
    except (WebSocketDisconnect, RuntimeError):  # the page is gone already
        pass
