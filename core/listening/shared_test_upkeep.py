"""Shared tests do not fill the disk: caps on what is kept, and the audio of finished tests deleted.

- **Caps**, counted over the tests whose audio is still kept: at most :data:`MAX_TESTS_PER_VISITOR`
  per visitor (the owner's client address as the trusted proxies name it, stored as its SHA-256;
  a call from Python names none and is the operator's) and :data:`MAX_AUDIO_BYTES` of audio in all. A share past either is refused in words that say
  what to do; nothing is stored.
- **Deletion**: :data:`KEEP_AUDIO_S` after a test closes or expires its audio is deleted (its
  answers, listeners and fetch records are kept: the results stay readable), then an SQLite file is
  compacted (the WAL checkpointed and truncated, ``VACUUM``); PostgreSQL's autovacuum reclaims the
  space itself. :meth:`Upkeep.sweep` runs at most every :data:`SWEEP_EVERY_S` per process, when a
  test is made or joined.
"""

from __future__ import annotations

import hashlib
import logging
import time

from core.listening.shared_test_db import Database
from core.listening.shared_test_schema import SCHEMA as TESTS_SCHEMA
from core.listening.shared_test_schema import SharedTestError
from core.units import GIB, MIB

logger = logging.getLogger(__name__)

KEEP_AUDIO_S = 24 * 3600.0  # a closed or expired test's audio is deleted this long after
MAX_TESTS_PER_VISITOR = 10  # tests with their audio kept, per owner address
MAX_AUDIO_BYTES = 2 * GIB  # the audio of every kept test together (nine 60 s conditions: about 26 MB)
SWEEP_EVERY_S = 600.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS room_upkeep (
    test TEXT PRIMARY KEY,
    visitor TEXT NOT NULL,            -- sha256 of the owner's client address
    audio_bytes BIGINT NOT NULL,
    audio_deleted DOUBLE PRECISION    -- NULL while the audio is kept
)
"""


class Upkeep:
    """The caps and the deletion of one shared tests' database."""

    def __init__(
        self,
        db: Database,
        clock=time.time,
        keep_audio_s: float = KEEP_AUDIO_S,
        per_visitor: int = MAX_TESTS_PER_VISITOR,
        total_bytes: int = MAX_AUDIO_BYTES,
    ):
        self.db = db
        self._clock = clock
        self.keep_audio_s = keep_audio_s
        self.per_visitor = per_visitor
        self.total_bytes = total_bytes
        self._swept_at = -float("inf")

    def _conn(self):
        return self.db.with_tables(TESTS_SCHEMA).with_tables(SCHEMA).connect()

    def admit(self, visitor: str, audio_bytes: int) -> None:
        """Refuse (SharedTestError, in words) a new test of ``audio_bytes`` from ``visitor`` past a cap."""
        self.maybe_sweep()
        with self._conn() as c:
            mine = c.execute(
                "SELECT COUNT(*) FROM room_upkeep WHERE visitor = ? AND audio_deleted IS NULL", (_hash(visitor),)
            ).fetchone()[0]
            kept = c.execute(
                "SELECT COALESCE(SUM(audio_bytes), 0) FROM room_upkeep WHERE audio_deleted IS NULL"
            ).fetchone()[0]
        after = f"a closed or expired test's audio is deleted {self.keep_audio_s / 3600:.0f} h after"
        if visitor and int(mine) >= self.per_visitor:  # "": a call from Python (the operator), no page
            raise SharedTestError(
                f"You have {int(mine)} shared tests whose audio is kept (at most {self.per_visitor}): "
                f"close one you no longer need ({after}), or wait until one expires.",
                "full",
            )
        if int(kept) + audio_bytes > self.total_bytes:
            raise SharedTestError(
                f"This server keeps at most {self.total_bytes / MIB:.0f} MiB of shared tests' audio and has "
                f"{int(kept) / MIB:.0f} MiB; this test needs {audio_bytes / MIB:.1f} MiB. Share a shorter region, "
                f"or ask the operator ({after}).",
                "full",
            )

    def made(self, test: str, visitor: str, audio_bytes: int) -> None:
        with self._conn() as c:
            c.execute(
                "INSERT INTO room_upkeep (test, visitor, audio_bytes, audio_deleted) VALUES (?, ?, ?, NULL)",
                (test, _hash(visitor), int(audio_bytes)),
            )

    def maybe_sweep(self) -> None:
        if self._clock() - self._swept_at >= SWEEP_EVERY_S:
            self.sweep()

    def sweep(self) -> int:
        """Delete the audio of tests closed or expired more than ``keep_audio_s`` ago; the number deleted."""
        now = self._clock()
        self._swept_at = now
        cutoff = now - self.keep_audio_s
        with self._conn() as c:
            done = [
                row[0]
                for row in c.execute(
                    "SELECT test FROM room_tests WHERE (closed IS NOT NULL AND closed < ?) OR expires < ?",
                    (cutoff, cutoff),
                ).fetchall()
            ]
            gone = 0
            for test in done:
                if c.execute("SELECT 1 FROM room_audio WHERE test = ? LIMIT 1", (test,)).fetchone() is None:
                    continue
                c.execute("DELETE FROM room_audio WHERE test = ?", (test,))
                c.execute(
                    "INSERT INTO room_upkeep (test, visitor, audio_bytes, audio_deleted) VALUES (?, '', 0, ?) "
                    "ON CONFLICT (test) DO UPDATE SET audio_deleted = ?",
                    (test, now, now),
                )
                gone += 1
        if gone:
            logger.info(
                "deleted the audio of %d finished shared tests (kept %.0f h after)", gone, self.keep_audio_s / 3600
            )
            self._compact()
        return gone

    def _compact(self) -> None:
        if self.db.path is None:
            return  # PostgreSQL: autovacuum
        with self.db.connect() as c:
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        with self.db.connect() as c:
            c.execute("VACUUM")


def _hash(visitor: str) -> str:
    return hashlib.sha256(f"shared-test owner:{visitor}".encode()).hexdigest()
