"""``/decode/ws``: codes in, PCM out, over one WebSocket; for a TTS server that streams its codes.

One socket is one ``engine.stream_decoder()`` (``core.model.stream_decoder``): the audio equals one
decode of all the codes, whatever the packet sizes. It is served on the app's own port
(``webui.server`` mounts it) and by ``python -m core serve-decode`` (``core.serving.decode_server``),
each with its own :class:`Gate` (who may open it, how many per client).

Messages (docs/stream-decode.md). Query: ``?format=pcm16`` (default) or ``float32``. Server -> client:
text ``{"type": "ready", "sample_rate", "samples_per_frame", "format", "max_frames_per_message", ...}``
once; then for every codes message one binary message, its frames' audio (little-endian int16 or
float32, mono, ``frames x samples_per_frame`` samples at ``sample_rate``); after an end message the
tail (if any) and text ``{"type": "done", "frames", "samples"}``, and the stream starts afresh for the
next utterance; text ``{"type": "error", "message"}`` (a sentence saying what to change), then the
socket closes. Client -> server: binary little-endian int16 rows of 16 codes (32 bytes a frame), or
text ``{"codes": [[16 ints], ...]}``; text ``{"type": "end"}``.

Bounds, as for every other way in: codes the codec can have made (0-2047, rows of 16; else the
sentence of ``core.codec.check_codes``), at most ``MAX_FRAMES_PER_MESSAGE`` frames a message, at most
``--max-duration`` of audio an utterance, ``--decode-streams`` streams on the server and
``--client-decode-streams`` per client (the gate), a stream at most ``MAX_AHEAD_S`` ahead of real time
(further packets wait: the socket's own backpressure holds the client), a socket with no message for
``IDLE_S`` closed, and a client that reads none of its audio for ``SEND_TIMEOUT_S`` closed (what the
server holds for it stays bounded by the transport's buffer).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from typing import Protocol

import anyio
import numpy as np
from starlette.websockets import WebSocket, WebSocketDisconnect

from core.codec import NUM_CODEBOOKS
from core.errors import CodecError

logger = logging.getLogger(__name__)

PATH = "/decode/ws"
FORMATS = {"pcm16": "<i2", "float32": "<f4"}
MAX_FRAMES_PER_MESSAGE = 125  # 10 s of codes a message; a TTS packet is 1-8 frames
MAX_TEXT_BYTES = 64 * 1024  # a JSON message of 125 frames is about 12 KB
BYTES_PER_FRAME = NUM_CODEBOOKS * 2  # one int16 row of 16 codes
MAX_AHEAD_S = 30.0  # a stream's audio may run this far ahead of the wall clock, then its packets wait
IDLE_S = 30.0  # a socket with no message for this long is closed
SEND_TIMEOUT_S = 10.0  # a client that takes none of its audio for this long is closed
PCM16_SCALE = 32767.0


class Gate(Protocol):
    """Who may open the socket and how many each client holds (the app's and ``serve-decode``'s)."""

    def allows(self, scope) -> bool:
        """False: closed before it is accepted (code 4403): a foreign page, no login."""

    def open(self, scope) -> tuple[object | None, str | None]:
        """(ticket, None) when the client may open one more, else (None, the sentence it gets)."""

    def close(self, ticket: object) -> None: ...


def too_many_streams(cap: int) -> str:
    """The sentence a client gets that holds ``cap`` sockets already (every gate's)."""
    return (
        f"This client holds {cap} decode streams already, the most one client may "
        f"(--client-decode-streams {cap}); end one first."
    )


class BadMessage(ValueError):
    """A message the protocol does not take; its text is the sentence the client gets."""


def parse_codes(message: Mapping) -> np.ndarray | str:
    """The codes (n, 16) int64 of a client message, or ``"end"``; ``BadMessage`` saying what is wrong."""
    data = message.get("bytes")
    if data is not None:
        if not data or len(data) % BYTES_PER_FRAME:
            raise BadMessage(
                f"A binary message is little-endian int16 rows of {NUM_CODEBOOKS} codes ({BYTES_PER_FRAME} bytes "
                f"a frame); this one has {len(data)} bytes."
            )
        _check_frames(len(data) // BYTES_PER_FRAME)
        return np.frombuffer(data, dtype="<i2").reshape(-1, NUM_CODEBOOKS).astype(np.int64)
    text = message.get("text") or ""
    if len(text) > MAX_TEXT_BYTES:
        raise BadMessage(f"A text message may be at most {MAX_TEXT_BYTES // 1024} KiB; send fewer frames at once.")
    try:
        command = json.loads(text)
    except (ValueError, RecursionError):
        raise BadMessage('A text message is JSON: {"codes": [[16 codes], ...]} or {"type": "end"}.') from None
    if not isinstance(command, dict):
        raise BadMessage('A text message is a JSON object: {"codes": [[16 codes], ...]} or {"type": "end"}.')
    if command.get("type") == "end":
        return "end"
    codes = command.get("codes")
    if not isinstance(codes, list) or not codes:
        raise BadMessage('Send codes as {"codes": [[16 codes], ...]} (at least one frame), or {"type": "end"}.')
    _check_frames(len(codes))
    if not all(isinstance(row, list) and len(row) == NUM_CODEBOOKS for row in codes):
        raise BadMessage(f"Every frame of codes is a list of {NUM_CODEBOOKS} integers.")
    if not all(isinstance(c, int) and not isinstance(c, bool) for row in codes for c in row):
        raise BadMessage("Codes are integers from 0 to 2047.")
    try:
        return np.asarray(codes, dtype=np.int64)
    except OverflowError:
        raise BadMessage("Codes are integers from 0 to 2047.") from None


def _check_frames(frames: int) -> None:
    if frames > MAX_FRAMES_PER_MESSAGE:
        raise BadMessage(
            f"A message may carry at most {MAX_FRAMES_PER_MESSAGE} frames; this one has {frames}. "
            "Send the codes as they are made, a packet at a time."
        )


def pcm_bytes(audio: np.ndarray, fmt: str) -> bytes:
    """``audio`` (float32 in [-1, 1]) as the socket's PCM: int16 (rounded, clipped) or float32."""
    if fmt == "pcm16":
        return np.round(np.clip(audio, -1.0, 1.0) * PCM16_SCALE).astype("<i2").tobytes()
    return np.asarray(audio, dtype="<f4").tobytes()


async def serve(ws: WebSocket, engine, gate: Gate) -> None:
    """One socket, start to end (see the module docstring)."""
    if not gate.allows(ws.scope):
        await ws.close(code=4403)  # refused before anything is opened
        return
    fmt = ws.query_params.get("format", "pcm16")
    await ws.accept()
    if fmt not in FORMATS:
        await _error(ws, f"format must be {' or '.join(FORMATS)}, not {fmt[:40]!r}.")
        return
    ticket, refusal = gate.open(ws.scope)
    if refusal is not None:
        await _error(ws, refusal)
        return
    try:
        try:
            decoder = await anyio.to_thread.run_sync(engine.stream_decoder)
        except CodecError as e:
            await _error(ws, str(e))
            return
        try:
            await _loop(ws, decoder, fmt, engine)
        except WebSocketDisconnect:  # the client went, or read nothing for SEND_TIMEOUT_S
            pass
        finally:
            decoder.close()  # at once, whatever ended the socket: the slot is free
    finally:
        gate.close(ticket)


async def _loop(ws: WebSocket, decoder, fmt: str, engine) -> None:
    await _send(
        ws,
        json.dumps(
            {
                "type": "ready",
                "sample_rate": decoder.sample_rate,
                "samples_per_frame": decoder.samples_per_frame,
                "format": fmt,
                "max_frames_per_message": MAX_FRAMES_PER_MESSAGE,
                "max_frames": decoder.max_frames,
                "streams_in_use": engine.streams.in_use,
                "streams_limit": engine.streams.limit,
            }
        ),
    )
    started: float | None = None  # when this utterance's first packet came
    while True:
        try:
            message = await asyncio.wait_for(ws.receive(), timeout=IDLE_S)
        except TimeoutError:
            await _error(ws, f"No message for {IDLE_S:g} s; the stream is closed. Send an end message when done.")
            return
        if message["type"] == "websocket.disconnect":
            return
        try:
            codes = parse_codes(message)
        except BadMessage as e:
            await _error(ws, str(e))
            return
        if isinstance(codes, str):  # end: the tail, then a fresh utterance
            tail = decoder.finish()
            if tail.size:
                await _send(ws, pcm_bytes(tail, fmt))
            frames = decoder.frames
            await anyio.to_thread.run_sync(decoder.reset)
            await _send(
                ws, json.dumps({"type": "done", "frames": frames, "samples": frames * decoder.samples_per_frame})
            )
            started = None
            continue
        started = time.monotonic() if started is None else started
        ahead = decoder.frames * decoder.samples_per_frame / decoder.sample_rate - (time.monotonic() - started)
        if ahead > MAX_AHEAD_S:  # hold the client: its next packets wait in the socket
            await asyncio.sleep(ahead - MAX_AHEAD_S)
        try:
            audio = await anyio.to_thread.run_sync(decoder.push, codes)
        except CodecError as e:
            await _error(ws, str(e))
            return
        await _send(ws, pcm_bytes(audio, fmt))


async def _send(ws: WebSocket, data: str | bytes) -> None:
    """Send, or end the socket when the client has read nothing for ``SEND_TIMEOUT_S``."""
    send = ws.send_bytes(data) if isinstance(data, bytes) else ws.send_text(data)
    try:
        await asyncio.wait_for(send, timeout=SEND_TIMEOUT_S)
    except TimeoutError:
        logger.warning("a decode client read none of its audio for %.0f s; closing it", SEND_TIMEOUT_S)
        raise WebSocketDisconnect(1008) from None


async def _error(ws: WebSocket, message: str) -> None:
    try:
        await asyncio.wait_for(ws.send_text(json.dumps({"type": "error", "message": message})), SEND_TIMEOUT_S)
        await ws.close(code=1008)
    except (WebSocketDisconnect, RuntimeError, TimeoutError):  # the client is gone already
        pass
