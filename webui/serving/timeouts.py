"""Server timeouts for clients that never finish a request (slowloris).

uvicorn (which Gradio starts, with its own settings) waits for a request's headers and body
without any limit: a client that sends half a header line, or stops in the middle of an
upload, holds a connection (and the upload's temp file) forever. This HTTP protocol adds the
two limits nginx has (``client_header_timeout``, ``client_body_timeout``):

- the request line and headers must arrive within ``HEADER_TIMEOUT_S`` of the connection (or
  of the first byte of the next request on a kept-alive connection), else 408 and close;
- while a body is coming in, at most ``BODY_IDLE_S`` may pass without a byte, else the
  connection is closed; the app sees a disconnect (an upload is then cleaned up).

Responses are not limited: a long job's event stream stays open as long as it needs.
"""

from __future__ import annotations

import asyncio
import logging
import time

from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger(__name__)

HEADER_TIMEOUT_S = 15.0  # seconds for the request line and all headers
BODY_IDLE_S = 20.0  # seconds without a byte while a request body is coming in
_TIMEOUT_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a body idle limit."""

    header_timeout_s = HEADER_TIMEOUT_S
    body_idle_s = BODY_IDLE_S

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._last_data = time.monotonic()
        self._arm_header_timer()

    def _idle_between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _cancel_timers(self) -> None:
        for name in ("_header_timer", "_body_timer"):
            timer = getattr(self, name, None)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)

    def data_received(self, data: bytes) -> None:
        self._last_data = time.monotonic()
        if self._idle_between_requests():
            self._arm_header_timer()  # a new request starts: its headers are on the clock
        cycle_before = self.cycle
        super().data_received(data)
        if self.cycle is not cycle_before and self.cycle is not None:  # its headers are complete
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            if self.cycle.more_body and self._body_timer is None:
                self._body_timer = self.loop.call_later(self.body_idle_s, self._check_body)

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self._idle_between_requests() or self.transport.is_closing():
            return
        if self.transport.get_protocol() is not self:  # upgraded (WebSocket): not ours any more
            return
        logger.info(
            "closed a connection from %s: headers not complete within %.0f s",
            self.client,
            self.header_timeout_s,
        )
        self.transport.write(_TIMEOUT_408)
        self.transport.close()

    def _check_body(self) -> None:
        self._body_timer = None
        cycle = self.cycle
        if cycle is None or not cycle.more_body or cycle.response_complete or self.transport.is_closing():
            return
        if self.flow.read_paused:  # we stopped reading (the app is behind), not the client
            self._last_data = time.monotonic()
        idle = time.monotonic() - self._last_data
        if idle < self.body_idle_s:
            self._body_timer = self.loop.call_later(self.body_idle_s - idle + 0.1, self._check_body)
            return
        logger.info(
            "closed a connection from %s: no request body bytes for %.0f s",
            self.client,
            idle,
        )
        self.transport.close()

    def connection_lost(self, exc) -> None:
        self._cancel_timers()
        super().connection_lost(exc)


def install(server) -> None:
    """Use :class:`TimedH11Protocol` for every new connection of a started uvicorn server
    (uvicorn makes each connection's protocol from ``config.http_protocol_class``)."""
    server.config.http_protocol_class = TimedH11Protocol
