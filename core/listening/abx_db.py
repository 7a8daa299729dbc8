"""The blind test's SQLite file: its tables, a connection that repairs what it finds, and the look
/ready and the doctor take at it (:mod:`core.listening.abx_store` keeps the sessions and answers in it).

``abx.sqlite3`` under the data folder, WAL, one connection per call. Every connection makes the
tables if they are missing (a deleted file is recreated), rewrites a database from before source ids
once (:mod:`core.listening.abx_migrate`) and waits at most ``busy_timeout_s`` for a lock; a damaged file
is moved aside (``abx.sqlite3.damaged-<time>``) and a new one made, once per call. Faults become an
:class:`core.listening.abx.AbxError` in words. :func:`store_problem` says what is wrong without writing.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path

from core.listening import abx_migrate
from core.listening.abx import AbxError

logger = logging.getLogger(__name__)

DB_NAME = "abx.sqlite3"  # file under the data folder
BUSY_TIMEOUT_S = 2.0  # longest wait for a locked database before the call is refused (was 10 s on the model queue)
PROBE_TIMEOUT_S = 0.5  # /ready's and the doctor's look at the database

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY,      -- sha256 of the client's token
    created REAL NOT NULL,         -- unix time
    clip_sha256 TEXT NOT NULL,     -- checksum of the original clip's samples
    a_source TEXT NOT NULL,        -- what A is: a source id ("original", "reconstruction")
    b_source TEXT NOT NULL,        -- what B is: a source id ("reconstruction", "k2", "opus6", "compare")
    b_detail TEXT NOT NULL DEFAULT '',  -- the second checkpoint's model path
    stored_as TEXT NOT NULL DEFAULT '', -- migrated names that map to no id ("" otherwise)
    seed INTEGER NOT NULL,
    plan TEXT NOT NULL,            -- X per trial, e.g. "ABBA..."
    presented_at REAL NOT NULL     -- when the current trial was shown (times the answer)
);
CREATE TABLE IF NOT EXISTS trials (
    session TEXT NOT NULL REFERENCES sessions(session),
    trial INTEGER NOT NULL,        -- 0-based
    clip_sha256 TEXT NOT NULL,
    a_source TEXT NOT NULL,
    b_source TEXT NOT NULL,
    b_detail TEXT NOT NULL DEFAULT '',
    stored_as TEXT NOT NULL DEFAULT '',
    x_is TEXT NOT NULL,            -- "A" or "B"
    answer TEXT NOT NULL,          -- "A" or "B"
    correct INTEGER NOT NULL,      -- 0 or 1
    seconds REAL NOT NULL,         -- from the trial being shown to the answer
    answered_at REAL NOT NULL,     -- unix time
    PRIMARY KEY (session, trial)
);
"""


class AbxFile:
    """``data_dir / DB_NAME``, created on first use; ``with file.connect() as conn:`` (committed on
    success). ``lock`` serialises this process's calls (the store also guards its memory with it)."""

    def __init__(self, data_dir: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(data_dir) / DB_NAME
        self.busy_timeout_s = busy_timeout_s
        self.lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise AbxError(
                f"Cannot create the data folder {self.path.parent} ({e.strerror}); set "
                "CODEC_DATA_DIR or --data-dir to a writable folder."
            ) from e
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            if abx_migrate.needs_migration(conn):
                abx_migrate.migrate(conn, self.path, SCHEMA)
            conn.executescript(SCHEMA)  # IF NOT EXISTS: a deleted file comes back whole
            conn.execute(f"PRAGMA user_version = {abx_migrate.SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def connect(self):
        """A connection (committed on success) to a working file, under ``lock``: a damaged one is
        moved aside and a new one made; other faults become an AbxError in words."""
        with self.lock:
            try:
                try:
                    conn = self._open()
                except sqlite3.DatabaseError as e:
                    if not _damaged(e):
                        raise
                    self._move_aside(e)
                    conn = self._open()
                with closing(conn), conn:
                    yield conn
            except sqlite3.DatabaseError as e:
                if _damaged(e):  # found mid-call: the next call starts on a new file
                    self._move_aside(e)
                raise AbxError(_fault_words(self.path, e)) from e

    def _move_aside(self, error: Exception) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            damaged = self.path.with_name(self.path.name + suffix)
            if damaged.exists():
                damaged.replace(damaged.with_name(f"{DB_NAME}.damaged-{stamp}{suffix}"))
        logger.error("blind-test database %s was damaged (%s): moved aside, a new one is made", self.path, error)


def _damaged(error: sqlite3.DatabaseError) -> bool:
    text = str(error).lower()
    return "not a database" in text or "malformed" in text or "file is encrypted" in text


def _fault_words(path: Path, error: sqlite3.DatabaseError) -> str:
    text = str(error)
    if "locked" in text or "busy" in text:
        return (
            f"The blind-test database {path} is busy (another program holds it); try again in a moment. "
            "If it stays busy, the operator should find what holds the file."
        )
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return f"The blind-test database {path} cannot be written ({text}); the operator should check --data-dir."
    return f"The blind-test database {path} failed ({text}); the operator should check --data-dir."


def store_problem(data_dir: str | Path, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the blind test cannot store answers right now, or None: for /ready and the doctor. Writes
    nothing (takes the write lock for an instant; a missing file is fine: it is made on first use,
    if the folder is writable)."""
    path = Path(data_dir) / DB_NAME
    if not path.exists():
        folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
        if folder is None or not os.access(folder, os.W_OK | os.X_OK):
            return f"the data folder {path.parent} cannot be created or written"
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=timeout_s)) as conn:
            conn.execute("SELECT name FROM sqlite_master").fetchall()
            conn.execute("BEGIN IMMEDIATE")  # can an answer be written now? (a lock held elsewhere says no)
            conn.execute("ROLLBACK")
    except sqlite3.DatabaseError as e:
        if _damaged(e):
            return f"the file is damaged ({e}); the next blind test moves it aside and starts a new one"
        return str(_fault_words(path, e))
    if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK):
        return "the file or its folder is not writable"
    return None
