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

Bounds: the login guards it like every page route; a block longer than ``MAX_BLOCK_S`` is refused;
the session refuses input faster than real time and longer than its limit (``core.model.live``);
a socket quiet for ``IDLE_S`` (a tab that froze or vanished without closing) is closed, and any end
of the socket closes the session at once, so its slot and memory are free within ``IDLE_S``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import struct
import time

import anyio
import numpy as np
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.routing import APIWebSocketRoute

from core.errors import CodecError, LiveSessionError
from webui import i18n
from webui.jobs import live as jobs
from webui.serving.guard import signed_in
from webui.serving.workspace import Workspace
from webui.views.words import codec_error_text

logger = logging.getLogger(__name__)

PATH = "/live/ws"
IDLE_S = 3.0  # a socket with no message for this long is closed, and its session with it
MAX_BLOCK_S = 1.0  # longest block a page may send at once (pages send 20 ms)
MAX_CHANNELS = 8
MAX_BEHIND_S = 3.0  # audio waiting to be worked on (the server cannot keep up): the session stops
RATES = (8_000, 192_000)  # microphone rates accepted, Hz
HEADER_OUT = struct.Struct("<4d")  # page clock ms, compute ms, lock wait ms, first frame
HEADER_IN = 8  # bytes of the page's clock before the samples


def live_routes(engine, workspace: Workspace) -> list[APIWebSocketRoute]:
    """The WebSocket route, to hand to Gradio's FastAPI app beside /health."""
    app = FastAPI()

    @app.websocket(PATH)
    async def live_ws(ws: WebSocket):
        await serve(ws, engine, workspace)

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


def same_origin(ws: WebSocket) -> bool:
    """A browser names the page that opens a WebSocket; only this app's own pages may (another site
    could otherwise use a signed-in visitor's cookie). Clients that send no Origin are not browsers."""
    origin = ws.headers.get("origin")
    if not origin:
        return True
    return _hostname(origin.split("://", 1)[-1]) == _hostname(ws.headers.get("host") or "")


def _hostname(authority: str) -> str:
    """The host of ``host[:port]`` (or ``[v6]:port``), lower case: nginx passes ``$host`` without the port."""
    authority = authority.split("/", 1)[0].lower()
    if authority.startswith("["):
        return authority.split("]", 1)[0] + "]"
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


async def serve(ws: WebSocket, engine, workspace: Workspace) -> None:
    if not signed_in(ws.scope) or not same_origin(ws):
        await ws.close(code=4403)  # refused before anything is opened
        return
    rate, channels, lang = _params(ws)
    await ws.accept()
    if not RATES[0] <= rate <= RATES[1] or not 1 <= channels <= MAX_CHANNELS:
        await _error(ws, i18n.text("live.error.format", lang, rate=rate, channels=channels))
        return
    try:
        session = await anyio.to_thread.run_sync(lambda: engine.live.open(rate, channels))
    except CodecError as e:
        await _error(ws, codec_error_text(e, lang))
        return
    try:
        await ws.send_text(
            json.dumps(
                {
                    "type": "ready",
                    "in_use": engine.live.in_use,
                    "limit": engine.live.limit,
                    "max_s": session.max_s,
                    "device": engine.info()["device_label"],
                }
            )
        )
        await _loop(ws, engine, workspace, session, rate, channels, lang)
    except WebSocketDisconnect:
        logger.info("live page went away after %.1f s of audio", session.input.seconds)
    finally:
        session.close()  # at once, whatever ended the socket: the slot and the state are free


async def _loop(ws: WebSocket, engine, workspace: Workspace, session, rate: int, channels: int, lang: str) -> None:
    frames_sent, started = 0, time.monotonic()
    max_bytes = HEADER_IN + int(MAX_BLOCK_S * rate) * channels * 4
    while True:
        try:
            message = await asyncio.wait_for(ws.receive(), timeout=IDLE_S)
        except TimeoutError:
            logger.warning("live page silent for %.0f s; closing its session", IDLE_S)
            await _error(ws, i18n.text("live.error.idle", lang, seconds=f"{IDLE_S:g}"))
            return
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        if message.get("text") is not None:
            try:
                command = json.loads(message["text"] or "{}")
            except ValueError:
                command = {}
            if isinstance(command, dict) and command.get("type") == "stop":
                await _finish(ws, engine, workspace, session, lang)
                return
            continue
        data = message.get("bytes") or b""
        if len(data) > max_bytes or (len(data) - HEADER_IN) % (4 * channels) or len(data) < HEADER_IN:
            await _error(ws, i18n.text("live.error.block", lang, seconds=f"{MAX_BLOCK_S:g}"))
            return
        clock_ms = struct.unpack_from("<d", data)[0]
        block = np.frombuffer(data, dtype="<f4", offset=HEADER_IN).reshape(-1, channels)
        try:
            step = await anyio.to_thread.run_sync(session.push, block)
        except LiveSessionError as e:
            if session.input.seconds + block.shape[0] / rate > session.max_s:  # the limit: keep what was said
                await _finish(ws, engine, workspace, session, lang, codec_error_text(e, lang))
            else:
                await _error(ws, codec_error_text(e, lang))
            return
        except CodecError as e:
            await _error(ws, codec_error_text(e, lang))
            return
        behind = time.monotonic() - started - session.input.seconds - MAX_BEHIND_S
        if behind > 0 and session.frame_compute_s:
            compute_ms = 1000 * float(np.median(session.frame_compute_s))
            logger.warning("live session %.1f s behind real time (%.0f ms per frame); stopping it", behind, compute_ms)
            await _error(ws, i18n.text("live.error.behind", lang, seconds=f"{MAX_BEHIND_S:g}", ms=f"{compute_ms:.0f}"))
            return
        if step.codes.shape[0]:
            header = HEADER_OUT.pack(clock_ms, step.compute_s * 1000, step.wait_s * 1000, frames_sent)
            await ws.send_bytes(header + step.original.astype("<f4").tobytes() + step.samples.astype("<f4").tobytes())
            frames_sent += step.codes.shape[0]


async def _finish(ws: WebSocket, engine, workspace: Workspace, session, lang: str, note: str | None = None) -> None:
    """Stop the session and save it as a round-trip result; tell the page its id."""
    started = time.perf_counter()
    try:
        result = await anyio.to_thread.run_sync(session.finish)
        folder = workspace.new_dir("live")
        await anyio.to_thread.run_sync(lambda: jobs.save_result(engine, result, folder))
    except CodecError as e:
        await _error(ws, codec_error_text(e, lang))
        return
    logger.info("live session saved to %s in %.2f s", folder.name, time.perf_counter() - started)
    await ws.send_text(json.dumps({"type": "done", "id": folder.name, "stats": result.stats, "note": note}))
    await ws.close()


async def _error(ws: WebSocket, message: str) -> None:
    try:
        await ws.send_text(json.dumps({"type": "error", "message": message}))
        await ws.close()
    except (WebSocketDisconnect, RuntimeError):  # the page is gone already
        pass
