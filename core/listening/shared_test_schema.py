"""The shared tests' tables in the shared tests' database (``core.listening.shared_test_db``), and the records read from them.

Every secret is stored as its SHA-256 only (``core.listening.shared_test_keys``); conditions are source ids
(``core.judging.sources``); each condition's audio is kept in the database itself as 16-bit samples,
so every replica and every host that shares the database serves the same test. The SQL is portable
(SQLite and PostgreSQL).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import CodecError

KINDS = ("mushra", "abx")

SCHEMA = """
CREATE TABLE IF NOT EXISTS room_tests (
    test TEXT PRIMARY KEY,            -- sha256 of the link
    owner TEXT NOT NULL,              -- sha256 of the owner key
    kind TEXT NOT NULL,               -- 'mushra' or 'abx'
    created DOUBLE PRECISION NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    closed DOUBLE PRECISION,          -- NULL while open
    clip_sha256 TEXT NOT NULL,
    plan TEXT NOT NULL,               -- JSON: MUSHRA conditions and items, or ABX a_source, b_source, trials
    seed BIGINT NOT NULL              -- secret: orders and X plans derive from it
);
CREATE TABLE IF NOT EXISTS room_audio (
    test TEXT NOT NULL,
    item INTEGER NOT NULL,
    source TEXT NOT NULL,             -- a source id
    pcm BYTEA NOT NULL,               -- 16-bit little-endian mono samples at 24 kHz
    PRIMARY KEY (test, item, source)
);
CREATE TABLE IF NOT EXISTS room_listeners (
    test TEXT NOT NULL,
    listener TEXT NOT NULL,           -- sha256 of the listener key
    number INTEGER NOT NULL,          -- 1, 2, ... in the order they joined (shown as "listener 2")
    nickname TEXT NOT NULL,
    joined DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (test, listener)
);
CREATE TABLE IF NOT EXISTS room_ratings (
    test TEXT NOT NULL,
    listener TEXT NOT NULL,
    item INTEGER NOT NULL,
    condition TEXT NOT NULL,          -- a source id
    rating INTEGER NOT NULL,          -- 0..100
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (test, listener, item, condition)
);
CREATE TABLE IF NOT EXISTS room_abx (
    test TEXT NOT NULL,
    listener TEXT NOT NULL,
    trial INTEGER NOT NULL,
    x_is TEXT NOT NULL,
    answer TEXT NOT NULL,
    correct INTEGER NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (test, listener, trial)
)
"""


class SharedTestError(CodecError):
    """A shared-test request that cannot be served; ``reason`` says which kind (for HTTP codes)."""

    def __init__(self, message: str, reason: str = "bad"):
        self.reason = reason  # "unknown", "closed", "expired", "full", "replay", "bad", "forbidden"
        super().__init__(message)


@dataclass(frozen=True)
class TestInfo:
    test: str  # the link's hash (never the link)
    kind: str
    created: float
    expires: float
    closed: float | None
    clip_sha256: str
    plan: dict
    seed: int

    def state(self, now: float) -> str:
        return "closed" if self.closed is not None else "expired" if now >= self.expires else "open"


@dataclass(frozen=True)
class Listener:
    listener: str  # the key's hash
    number: int
    nickname: str
