"""serve-decode's server in a thread of the test process (a real socket on a reserved port), for the
tests of ``/decode/ws`` and its client (test_decode_socket, test_stream_client)."""

from __future__ import annotations

import threading
import time

from core.serving.decode_server import make_server
from tests.ports import reserve_port


class RunningServer:
    """``make_server(engine, 127.0.0.1, port)`` started in a thread; ``url`` is its socket."""

    def __init__(self, engine):
        self.port = reserve_port()
        self.server = make_server(engine, "127.0.0.1", self.port)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "serve-decode did not start"
            time.sleep(0.05)
        self.url = f"ws://127.0.0.1:{self.port}/decode/ws"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
