"""A blocking Python client of ``/decode/ws`` (the app's or ``python -m core serve-decode``'s).

    from core.serving.stream_client import StreamClient

    with StreamClient("ws://127.0.0.1:8765/decode/ws") as client:   # format="float32" for float PCM
        for packet in packets:                                       # (n, 16) codes as the TTS model makes them
            play(client.push(packet))                                # float32 audio at client.sample_rate
        play(client.end())                                           # the tail; the next utterance may follow

Over a plain socket and ``wsproto`` (already a dependency of the server). ``ws://`` and ``wss://``; a
server's error message is raised as :class:`StreamClientError` with its sentence.
"""

from __future__ import annotations

import json
import socket
import ssl
from urllib.parse import urlsplit

import numpy as np
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

from core.codec import NUM_CODEBOOKS
from core.errors import CodecError

RECV_BYTES = 65536
TIMEOUT_S = 60.0
PCM16_SCALE = 32767.0
FORMATS = {"pcm16": "<i2", "float32": "<f4"}


class StreamClientError(CodecError):
    """The server refused or ended the stream; the text is its sentence."""


class StreamClient:
    """One decode stream over ``/decode/ws`` (see the module docstring)."""

    def __init__(
        self,
        url: str,
        format: str = "pcm16",
        timeout_s: float = TIMEOUT_S,
        origin: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        if format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}")
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"a decode socket's address looks like ws://host:port/decode/ws, not {url!r}")
        self.format = format
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        self.sock: socket.socket = socket.create_connection((parts.hostname, port), timeout=timeout_s)
        if parts.scheme == "wss":
            self.sock = ssl.create_default_context().wrap_socket(self.sock, server_hostname=parts.hostname)
        self.ws = WSConnection(ConnectionType.CLIENT)
        query = parts.query if "format=" in parts.query else "&".join(p for p in (parts.query, f"format={format}") if p)
        target = (parts.path or "/") + "?" + query
        extra = [(b"origin", origin.encode())] if origin else []  # what a browser page would send
        extra += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]  # e.g. the app's login cookie
        self._send(Request(host=parts.netloc, target=target, extra_headers=extra))
        self._events: list = []
        self.closed = False
        self.ready = self._wait_ready()
        self.sample_rate = int(self.ready["sample_rate"])
        self.samples_per_frame = int(self.ready["samples_per_frame"])

    # ---- the stream ----------------------------------------------------------------------------------
    def push(self, codes) -> np.ndarray:
        """Send ``codes`` (n, 16) as one binary message; return their audio (float32, n x samples_per_frame)."""
        array = np.asarray(codes)
        if array.ndim == 1:
            array = array[None]
        if array.ndim != 2 or array.shape[1] != NUM_CODEBOOKS:
            raise ValueError(f"codes are (frames, {NUM_CODEBOOKS}), not {array.shape}")
        if array.size and (array.min() < -32768 or array.max() > 32767):
            raise ValueError("codes do not fit int16")
        self.send_raw(array.astype("<i2").tobytes())
        return self.read_audio()

    def end(self) -> np.ndarray:
        """End the utterance: the tail's audio (usually empty); the stream then takes a new utterance."""
        self._send(Message(data=json.dumps({"type": "end"})))
        tail = []
        while True:
            _kind, data = self._next_message()
            if isinstance(data, bytes):
                tail.append(self._audio(data))
                continue
            reply = json.loads(data)
            if reply.get("type") == "done":
                self.done = reply
                return np.concatenate(tail) if tail else np.zeros(0, np.float32)
            self._raise(reply)

    # ---- lower level (tests, bad input) --------------------------------------------------------------
    def send_raw(self, data: bytes | str) -> None:
        """One binary (bytes) or text (str) message as it is."""
        self._send(Message(data=data))

    def read_audio(self) -> np.ndarray:
        """The next binary message's audio; ``StreamClientError`` when the server answers with an error."""
        _kind, data = self._next_message()
        if isinstance(data, bytes):
            return self._audio(data)
        self._raise(json.loads(data))
        raise AssertionError("unreachable")

    def read_message(self) -> tuple[str, bytes | str]:
        """("bytes", data) or ("text", data): the next message as it came."""
        return self._next_message()

    def _audio(self, data: bytes) -> np.ndarray:
        audio = np.frombuffer(data, dtype=FORMATS[self.format])
        return (audio / PCM16_SCALE).astype(np.float32) if self.format == "pcm16" else audio.astype(np.float32)

    def _raise(self, reply: dict) -> None:
        if reply.get("type") == "error":
            raise StreamClientError(str(reply.get("message")))
        raise StreamClientError(f"unexpected message from the server: {str(reply)[:200]}")

    def _wait_ready(self) -> dict:
        while True:
            kind, data = self._next_message()
            if kind == "text":
                reply = json.loads(data)
                if reply.get("type") == "ready":
                    return reply
                self._raise(reply)

    # ---- wsproto over the socket ---------------------------------------------------------------------
    def _send(self, event) -> None:
        self.sock.sendall(self.ws.send(event))

    def _next_message(self) -> tuple[str, bytes | str]:
        text: list[str] = []
        data: list[bytes] = []
        while True:
            while not self._events:
                if self.closed:
                    raise StreamClientError("The server closed the stream.")
                chunk = self.sock.recv(RECV_BYTES)
                self.ws.receive_data(chunk or None)
                if not chunk:
                    self.closed = True
                self._events.extend(self.ws.events())
            event = self._events.pop(0)
            if isinstance(event, AcceptConnection):
                continue
            if isinstance(event, RejectConnection):
                self.closed = True
                raise StreamClientError(f"The server refused the socket (HTTP {event.status_code}).")
            if isinstance(event, Ping):
                self._send(event.response())
            elif isinstance(event, CloseConnection):
                if not self.closed:
                    try:
                        self._send(event.response())
                    except OSError:
                        pass
                self.closed = True
                raise StreamClientError(f"The server closed the stream (code {event.code}).")
            elif isinstance(event, TextMessage):
                text.append(event.data)
                if event.message_finished:
                    return "text", "".join(text)
            elif isinstance(event, BytesMessage):
                data.append(bytes(event.data))
                if event.message_finished:
                    return "bytes", b"".join(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._send(CloseConnection(code=1000))
            except Exception:  # noqa: BLE001 - the connection may be gone already
                pass
            self.closed = True
        self.sock.close()

    def __enter__(self) -> StreamClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
