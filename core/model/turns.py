"""The engine's lock, fair to short turns: long jobs give it up between chunks to live frames.

One lock still serialises all model work (two calls never interleave on the device). It is
re-entrant, as the engine's jobs nest (a round trip holds it around its encode and decode). Two kinds
of holder:

- a **job** (encode, decode, round trip, batch) takes it with ``with lock:`` and, between two of its
  chunks (an encode window, a decode chunk, a batch group), calls :meth:`TurnLock.give_turn`. When a
  short turn is waiting, the job releases the lock completely (every level of its nesting), waits until
  each turn that was waiting at that moment has had the lock once, and takes it back at the same depth.
  Its own state (keys/values, decoder stream, output buffers) is untouched meanwhile, so its result is
  bit for bit the result of running alone.
- a **short turn** (one live frame's encode or decode) takes it with ``with lock.turn():``.

So a live frame waits for at most one chunk of another job (plus the frames of other live sessions
queued before it). A session that fell behind during a chunk catches up on all its queued frames before
the job goes on (live has priority; the job gets the rest): a session with at least a frame of input
queued says so with :meth:`TurnLock.pending` after each of its pushes, and a job that hands over
waits until no session is pending and no turn has asked for ``GRACE_S``, for at most
``GIVE_TURN_MAX_S`` at one point. Waiting only for the turns that asked is not enough: between two of
a session's frames its thread hops through the event loop and a worker, which takes longer than any
short grace on a busy CPU, so the job took the lock back after each frame and the session fell behind.
Saying so lasts ``PENDING_S`` unless said again, so a session whose thread stalls (a page that stopped
reading its audio) cannot hold jobs back; one that keeps up never says it.
``holder`` says what holds the lock now ("job" or "live"); a waiting live frame uses it to say who made
it wait.
"""

from __future__ import annotations

import contextlib
import threading
import time

GIVE_TURN_MAX_S = 2.0  # a job hands the lock over for at most this long at one point (live cannot starve it)
GRACE_S = 0.004  # after the waiting turns, a job waits this long for their next one (a session catching up)
PENDING_S = 0.25  # a session's "input queued" lasts this long unless said again (after its next push)


class TurnLock:
    """A re-entrant lock with hand-over points for short turns (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cond = threading.Condition(threading.Lock())
        self._waiting = 0  # short turns waiting for the lock
        self._pending: dict[object, float] = {}  # session -> until when it has input queued (``pending``)
        self._depth = 0  # nesting depth of the current holder
        self.holder: str | None = None  # "job" or "live" while held, else None
        self.given = 0  # hand-overs made (for tests and logs)

    # ---- jobs: ``with lock:`` -------------------------------------------------------------------
    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._depth += 1
            if self._depth == 1:
                self.holder = "job"
        return got

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.holder = None
        self._lock.release()

    def __enter__(self) -> TurnLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def owned(self) -> bool:
        """True when the calling thread holds the lock."""
        return self._lock._is_owned()  # type: ignore[attr-defined]  # RLock's own ownership test

    # ---- short turns ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def turn(self):
        """Hold the lock for one short piece of work (a live frame); yields the seconds waited and
        what held the lock when the wait began ("job", "live" or None)."""
        asked = time.perf_counter()
        blocker = self.holder
        with self._cond:
            self._waiting += 1
            self._cond.notify_all()  # a job in its grace wait goes on waiting
        try:
            self._lock.acquire()
        finally:
            with self._cond:
                self._waiting -= 1
                self._cond.notify_all()
        self._depth += 1
        outer = self.holder
        if self._depth == 1:
            self.holder = "live"
        try:
            yield time.perf_counter() - asked, blocker
        finally:
            self._depth -= 1
            self.holder = outer if self._depth else None
            self._lock.release()

    def waiting(self) -> int:
        with self._cond:
            return self._waiting

    def pending(self, key: object, queued: bool) -> None:
        """Session ``key`` has input queued (``queued``; for ``PENDING_S`` unless said again) or has
        caught up: while any session has, a job that hands the lock over waits for it (its next frames
        ask for turns soon). Clear it when the session ends."""
        with self._cond:
            if queued:
                self._pending[key] = time.monotonic() + PENDING_S
            else:
                self._pending.pop(key, None)
            self._cond.notify_all()

    def _someone_pending(self) -> bool:
        now = time.monotonic()
        return any(until > now for until in self._pending.values())

    def _quiet(self) -> bool:
        return not self._waiting and not self._someone_pending()

    def _asked(self) -> bool:
        return bool(self._waiting) or self._someone_pending()

    # ---- jobs: hand-over points -----------------------------------------------------------------
    def give_turn(self) -> None:
        """Between two chunks of a job: if short turns wait or a session is pending, hand the lock over
        until every waiting turn has had it, no session is pending and none asks again within
        ``GRACE_S`` (at most ``GIVE_TURN_MAX_S``). Does nothing when none waits or is pending, or when
        the caller does not hold the lock."""
        with self._cond:
            if self._quiet():
                return
        if not self.owned():
            return
        depth, holder = self._depth, self.holder
        self._depth, self.holder = 0, None
        saved = self._lock._release_save()  # type: ignore[attr-defined]  # releases every nesting level
        try:
            deadline = time.monotonic() + GIVE_TURN_MAX_S
            with self._cond:
                while True:  # a pending session's time runs out without a notify: look again then
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    if not self._cond.wait_for(self._quiet, timeout=min(left, PENDING_S)):
                        continue
                    if not self._cond.wait_for(self._asked, timeout=min(GRACE_S, left)):
                        break
        finally:
            self._lock._acquire_restore(saved)  # type: ignore[attr-defined]
            self._depth, self.holder = depth, holder
            self.given += 1
