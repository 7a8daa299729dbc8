"""The engine's live sessions (``engine.live``): admission, the sessions' model thread, and cleanup.

:class:`LiveSessions` admits at most ``Settings.live_sessions`` at once and no more than the measured
per-frame cost keeps in real time (on a GPU: the cost of the batched step for that many), refuses the
next with a message that gives the count, lowers batch work's priority while sessions are open
(``core.model.cpu_share``), and closes a session idle for ``IDLE_CLOSE_S`` when the next one opens
(the net under the transports' own close). One session is ``core.model.live.LiveSession``.
"""

from __future__ import annotations

import logging
import threading
import time

from core.codec import FRAME_S
from core.errors import LiveBusy
from core.model import cpu_share, torch_threads
from core.model.live import LiveSession
from core.model.live_batcher import FrameBatcher, batch_wanted, build_batcher
from core.units import MIB

logger = logging.getLogger(__name__)

IDLE_CLOSE_S = 5.0  # a session with no input for this long is closed when another one opens
LOAD_SHARE = 0.75  # admit sessions while their measured frames fill at most this share of each 80 ms
COST_SMOOTHING = 0.05  # weight of the newest frame in the running per-frame cost
AUTO_PACKET_CPU = 4  # ``--live-packet-frames 0`` on a CPU with a large model: one pass over the weights per 320 ms
AUTO_PACKET_MIN_WEIGHT_BYTES = 64 * MIB  # a model this large is bound by reading its weights at one frame per step


class LiveSessions:
    """The engine's live sessions: admission (at most ``settings.live_sessions``) and cleanup."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self._sessions: set[LiveSession] = set()
        self._guard = threading.Lock()
        self.frame_cost_s: float | None = None  # running model work per frame (one session), measured
        self.batched: bool | None = None  # one batched step for all sessions; None: on a GPU with graphs
        self._batcher: FrameBatcher | None = None
        self.thread = torch_threads.OneThread("live-cpu")  # every session's model work on a CPU
        self.cpu = cpu_share.CpuShare(lambda: self.in_use)  # batch work yields the CPU to open sessions

    def observe(self, frame_s: float) -> None:
        """One frame's measured model work (the admission's cost)."""
        cost = self.frame_cost_s
        self.frame_cost_s = frame_s if cost is None else cost + COST_SMOOTHING * (frame_s - cost)

    def capacity(self) -> int:
        """Sessions the measured per-frame cost allows (``LOAD_SHARE`` of real time), at most ``--live-sessions``."""
        if self._batcher is not None and self.use_batch():  # the measured batched step for that many
            return self._batcher.capacity(self.limit, LOAD_SHARE * FRAME_S)
        cost = self.frame_cost_s
        if cost is None or cost <= 0:
            return self.limit
        return max(1, min(self.limit, int(LOAD_SHARE * FRAME_S / cost)))

    @property
    def limit(self) -> int:
        return int(self.engine.settings.live_sessions)

    def packet_frames(self) -> int:
        """Frames per step: ``--live-packet-frames``, or for 0 (auto) 4 on a CPU with a model past
        ``AUTO_PACKET_MIN_WEIGHT_BYTES`` (a frame there costs more than real time) and 1 elsewhere."""
        settings, dims = self.engine.settings, self.engine._dims
        if settings.live_packet_frames:
            return int(settings.live_packet_frames)
        large = dims is not None and dims.weight_bytes >= AUTO_PACKET_MIN_WEIGHT_BYTES
        return AUTO_PACKET_CPU if not settings.is_cuda and large else 1

    @property
    def in_use(self) -> int:
        with self._guard:
            return len(self._sessions)

    def max_seconds(self) -> float:
        """Longest session: the live limit, never more than the audio limit of every other way in."""
        s = self.engine.settings
        return float(min(s.live_max_s, s.max_duration_s))

    def open(self, sample_rate: int, channels: int = 1, *, paced: bool = True, name: str = "microphone"):
        """A new session for a microphone at ``sample_rate`` with ``channels``; ``paced=False`` lets a
        local caller (the CLI) push faster than real time. LiveBusy when all are in use."""
        self._reap()
        with self._guard:
            if self.limit <= 0:
                raise LiveBusy("Live mode is off on this server (--live-sessions 0).")
            if len(self._sessions) >= self.limit:
                raise LiveBusy(
                    f"Live is busy: {len(self._sessions)} of {self.limit} sessions are in use. Try again in a moment."
                )
            capacity = self.capacity()
            if len(self._sessions) >= capacity:
                cost = self._batcher.step_cost_s(len(self._sessions) + 1) if self._batcher else self.frame_cost_s
                cost_ms = 1000 * (cost or 0.0)
                raise LiveBusy(
                    f"Live is busy: {len(self._sessions)} sessions are in use and each 80 ms frame costs "
                    f"≈{cost_ms:.0f} ms of model work here, so this device keeps {capacity} in real time. "
                    "Try again in a moment."
                )
            session = LiveSession(self, sample_rate, channels, paced, name)
            self._sessions.add(session)
        self.cpu.live_opened()
        try:
            self.on_model_thread(session.start)
        except BaseException:
            session.close()
            raise
        return session

    def on_model_thread(self, fn, *args):
        """``fn(*args)``: on a CPU on the sessions' one thread (``core.model.torch_threads``); here on a
        GPU or with the batched step, which gathers the frames its callers' threads bring."""
        direct = self.engine.settings.is_cuda or self.use_batch()
        return fn(*args) if direct else self.thread.call(fn, *args)

    def use_batch(self) -> bool:
        """Whether sessions share the batched step (``batched``, else ``live_batcher.batch_wanted``)."""
        return batch_wanted(self.engine.settings) if self.batched is None else self.batched

    def batcher(self, model, runner) -> FrameBatcher | None:
        """The shared batched step (built at the first batched session), or None (a bf16 decoder)."""
        if self._batcher is None:
            self._batcher = build_batcher(self.engine, model, runner, self.limit, self.max_seconds())
        return self._batcher

    def _release(self, session: LiveSession) -> None:
        with self._guard:
            self._sessions.discard(session)

    def _reap(self) -> None:
        now = time.monotonic()
        with self._guard:
            idle = [s for s in self._sessions if now - s.last_input > IDLE_CLOSE_S]
        for session in idle:
            logger.warning("closing a live session idle for %.1f s", now - session.last_input)
            session.close()

    def close_all(self) -> None:
        with self._guard:
            sessions = list(self._sessions)
        for session in sessions:
            session.close()
        self._batcher = None  # its slot pools belong to the model
