"""How often a client may call a shared test: counted in the shared tests' database, so every replica behind
nginx (and every host sharing a PostgreSQL server) counts the same calls.

A limit is "at most ``per_min`` calls of one thing in any minute", as a sliding window over two
counters a bucket: the calls of this clock minute, plus those of the minute before weighted by the
share of it still inside the last 60 s. A call is counted only when it is allowed, in one statement
(an upsert whose update holds only below the allowance, ``RETURNING`` the count), so two replicas
answering at once cannot both take the last call. What is counted is stored as its SHA-256 (no
address, link or key in clear) and rows older than the minute before are deleted as calls come.
Times are the wall clock (``time.time``), which replicas on one host, or hosts kept by NTP, share.
"""

from __future__ import annotations

import hashlib
import math
import time

from core.listening.shared_test_db import Database

WINDOW_S = 60.0  # the limits are per minute

SCHEMA = """
CREATE TABLE IF NOT EXISTS room_limits (
    bucket TEXT NOT NULL,             -- sha256 of what is counted ("answer", an address, a listener and a test)
    minute BIGINT NOT NULL,           -- unix time // 60
    hits INTEGER NOT NULL,            -- calls allowed in that minute
    PRIMARY KEY (bucket, minute)
);
CREATE INDEX IF NOT EXISTS room_limits_minute ON room_limits (minute)
"""


class SharedTestLimits:
    """Per-minute limits shared through a :class:`Database` (SQLite or PostgreSQL)."""

    def __init__(self, db: Database, clock=time.time):
        self.db = db
        self._clock = clock

    def _conn(self):
        return self.db.with_tables(SCHEMA).connect()

    def allow(self, what: str, per_min: int) -> bool:
        """Count one call of ``what`` and say True, if fewer than ``per_min`` were counted in the last
        minute; otherwise False, and nothing is counted."""
        now = self._clock()
        minute, through = int(now // WINDOW_S), (now % WINDOW_S) / WINDOW_S
        bucket = hashlib.sha256(what.encode("utf-8", "surrogatepass")).hexdigest()
        with self._conn() as c:
            row = c.execute(
                "SELECT hits FROM room_limits WHERE bucket = ? AND minute = ?", (bucket, minute - 1)
            ).fetchone()
            allowance = per_min - math.floor((int(row[0]) if row else 0) * (1.0 - through))
            if allowance <= 0:
                return False
            counted = c.execute(
                "INSERT INTO room_limits (bucket, minute, hits) VALUES (?, ?, 1) "
                "ON CONFLICT (bucket, minute) DO UPDATE SET hits = room_limits.hits + 1 "
                "WHERE room_limits.hits < ? RETURNING hits",
                (bucket, minute, allowance),
            ).fetchall()
            c.execute("DELETE FROM room_limits WHERE minute < ?", (minute - 1,))
        return bool(counted)
