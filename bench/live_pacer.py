"""A microphone over ``/live/ws`` without a browser: 20 ms blocks at 48 kHz, each sent when a real
microphone would have captured it, over a plain socket (wsproto, the WebSocket library uvicorn uses).

    python -m bench.live_pacer --port 7860 [--host 127.0.0.1] [--seconds 600]

Runs in a process of its own, so its work never competes with the server's threads for one
interpreter. Sends until ``--seconds`` of audio or a line on stdin, then ``stop``; prints one JSON
line: seconds sent, frames back, how late replies came (reply time minus the block's send time),
and the server's ``error`` sentence if it stopped the session, else the ``done`` message.
``bench.live_beside_job`` drives it.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import struct
import sys
import threading
import time

import numpy as np

RATE = 48_000
BLOCK = 960  # 20 ms, as the page sends them
HEADER_OUT = struct.Struct("<4d")  # page clock ms, compute ms, lock wait ms, first frame


def speechlike(seconds: float, rate: int = RATE, seed: int = 0) -> np.ndarray:
    """A gliding harmonic tone with a syllable envelope and a little noise (peak 0.5)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    phase = 2 * np.pi * np.cumsum(140 + 40 * np.sin(2 * np.pi * 0.7 * t)) / rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
    x = 0.35 * voiced * (1 + np.sin(2 * np.pi * 3.0 * t)) ** 2 / 4 + 0.01 * rng.standard_normal(t.size)
    return (0.5 * x / max(float(np.abs(x).max()), 1e-9)).astype(np.float32)


class Socket:
    """A WebSocket client on one TCP connection; ``messages`` collects what the server sends."""

    def __init__(self, host: str, port: int, target: str):
        from wsproto import ConnectionType, WSConnection  # here: speechlike() is used where wsproto is not

        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.guard = threading.Lock()
        self.replies: list[tuple[float, bytes]] = []  # (arrival, binary message)
        self.texts: list[dict] = []
        self.closed = threading.Event()
        self._parts: list[bytes] = []
        from wsproto.events import Request

        self.sock.sendall(self.ws.send(Request(host=f"{host}:{port}", target=target)))
        while True:
            events = self._read()
            if any(type(e).__name__ == "AcceptConnection" for e in events):
                break
            if any(type(e).__name__ == "RejectConnection" for e in events) or self.closed.is_set():
                raise ConnectionError("the server refused the WebSocket")
        self.reader = threading.Thread(target=self._read_all, daemon=True)
        self.reader.start()

    def _read(self) -> list:
        from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage

        data = self.sock.recv(1 << 16)
        with self.guard:
            self.ws.receive_data(data or None)
            events = list(self.ws.events())
        now = time.monotonic()
        for event in events:
            if isinstance(event, BytesMessage):
                self._parts.append(bytes(event.data))
                if event.message_finished:
                    self.replies.append((now, b"".join(self._parts)))
                    self._parts = []
            elif isinstance(event, TextMessage):
                self.texts.append(json.loads(event.data))
            elif isinstance(
                event, Ping
            ):  # unanswered, the server closes the socket after its ping timeout (uvicorn: 20 + 20 s)
                with self.guard:
                    pong = self.ws.send(event.response())
                self.sock.sendall(pong)
            elif isinstance(event, CloseConnection):
                try:
                    with self.guard:
                        reply = self.ws.send(event.response())
                    self.sock.sendall(reply)
                except Exception:  # noqa: BLE001 - a close that cannot be answered ends the same
                    pass
                self.closed.set()
        if not data:
            self.closed.set()
        return events

    def _read_all(self) -> None:
        self.sock.settimeout(None)
        try:
            while not self.closed.is_set():
                self._read()
        except OSError:
            self.closed.set()

    def send(self, data: bytes | str) -> bool:
        """Send one message; False once the connection is closing (the server ended the session)."""
        from wsproto.connection import ConnectionState
        from wsproto.events import Message

        with self.guard:
            if self.ws.state != ConnectionState.OPEN:
                return False
            out = self.ws.send(Message(data=data))  # type: ignore[type-var]  # bytes or str, as wsproto takes
        try:
            self.sock.sendall(out)
        except OSError:
            return False
        return True


def run(host: str, port: int, seconds: float, stop_on_stdin: bool = True) -> dict:
    signal = speechlike(min(seconds, 10.0))  # looped
    ws = Socket(host, port, f"/live/ws?rate={RATE}&channels=1&lang=en")
    deadline = time.monotonic() + 30
    while not ws.texts and time.monotonic() < deadline and not ws.closed.is_set():
        time.sleep(0.01)
    ready = ws.texts[0] if ws.texts else {}
    print(json.dumps({"ready": ready}), flush=True)  # the driver starts its job now
    sent = 0
    t0 = time.monotonic()
    stopped_by = "seconds"
    while sent < seconds * RATE and not ws.closed.is_set():
        due = t0 + (sent + BLOCK) / RATE  # the moment a microphone has this block
        wait = due - time.monotonic()
        if wait > 0:
            if stop_on_stdin and select.select([sys.stdin], [], [], wait)[0]:
                stopped_by = "stdin"
                break
            time.sleep(max(0.0, due - time.monotonic()))
        low = sent % signal.size
        block = signal[low : low + BLOCK]
        if block.size < BLOCK:
            block = np.concatenate([block, signal[: BLOCK - block.size]])
        if not ws.send(struct.pack("<d", time.monotonic() * 1000) + block.astype("<f4").tobytes()):
            break
        sent += BLOCK
    sent_s = sent / RATE
    if not ws.closed.is_set():
        ws.send(json.dumps({"type": "stop"}))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(t.get("type") in ("done", "error") for t in ws.texts[1:]):
        if ws.closed.is_set():
            break
        time.sleep(0.02)
    late = [arrival * 1000 - HEADER_OUT.unpack_from(m)[0] for arrival, m in ws.replies]
    ends = [t for t in ws.texts[1:] if t.get("type") in ("done", "error")]
    end = ends[0] if ends else {"type": "none"}
    error = end.get("message") if end.get("type") == "error" else end.get("note")
    return {
        "sent_s": round(sent_s, 2),
        "stopped_by": stopped_by if not error else "server",
        "replies": len(ws.replies),
        "reply_late_ms": {
            "median": round(float(np.median(late)), 1) if late else None,
            "p95": round(float(np.percentile(late, 95)), 1) if late else None,
            "max": round(float(max(late)), 1) if late else None,
        },
        "error": error,
        "end": end.get("type"),
        "stats": end.get("stats"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=600.0)
    args = parser.parse_args()
    print(json.dumps(run(args.host, args.port, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
