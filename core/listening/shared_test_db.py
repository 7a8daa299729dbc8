"""Where shared listening tests are stored: the embedded SQLite file (the default) or a PostgreSQL
server named by one setting (``CODEC_DATABASE_URL=postgresql://user@host/db``), with the same schema.

SQLite: ``room.sqlite3`` under the data folder, WAL, a busy timeout, a connection per call, so N
replicas on one host (``deploy/replicas.py`` behind nginx) share one file and see one test wherever
a link lands. A deleted file is made again, tables and all, on the next call; a damaged one is moved
aside (``room.sqlite3.damaged-<time>``, kept for the operator) and a new one made, as the blind
test's file is (``core.listening.abx_db``); :meth:`Database.problem` says what is wrong without
writing (``/ready``, the doctor). PostgreSQL (``psycopg``, the ``postgres`` extra): a connection per call too; for
several hosts. The SQL the store writes is portable: ``?`` placeholders (turned into ``%s`` for
psycopg), ``ON CONFLICT DO NOTHING``, ``DOUBLE PRECISION`` for times.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from contextlib import closing, contextmanager
from pathlib import Path

from core.errors import CodecError

logger = logging.getLogger(__name__)

DB_NAME = "room.sqlite3"  # file under the data folder
BUSY_TIMEOUT_S = 5.0  # longest wait for a locked SQLite file
PROBE_TIMEOUT_S = 0.5  # /ready's and the doctor's look at the SQLite file


class SharedTestDbError(CodecError):
    """The shared tests' database cannot be used; the message names it and what to check."""


class Database:
    """One database, SQLite or PostgreSQL: ``with db.connect() as c: c.execute(sql, args)``."""

    def __init__(self, data_dir: str | Path | None = None, url: str | None = None):
        self.url = (url or "").strip()
        if self.url and not self.url.startswith(("postgresql://", "postgres://")):
            raise SharedTestDbError(
                f"CODEC_DATABASE_URL must be a postgresql:// URL (got {self.url.split('://')[0]!r}://...); "
                "leave it empty for the SQLite file under the data folder."
            )
        self.path = None if self.url else Path(data_dir or ".") / DB_NAME
        self.kind = "postgresql" if self.url else "sqlite"
        self._made: set[str] = set()  # schemas whose tables this object has made
        self._schemas: list[str] = []  # every schema asked for (made again in a new file)

    def with_tables(self, schema: str) -> Database:
        """This database, once ``schema``'s tables are there: made if missing, once per object
        (``CREATE ... IF NOT EXISTS``: another replica making them at the same time is harmless)."""
        if self.path is not None and not self.path.exists():  # deleted while serving: made again
            self._made.clear()
        if schema not in self._schemas:
            self._schemas.append(schema)
        if schema not in self._made:
            with self.connect() as c:
                c.script(schema)
            self._made.add(schema)
        return self

    def describe(self) -> str:
        """Where it is, without a password."""
        if self.path is not None:
            return str(self.path)
        head, _, tail = self.url.partition("@")
        return f"postgresql://…@{tail}" if tail else head

    @contextmanager
    def connect(self):
        """A connection, committed when the block ends without an exception, rolled back otherwise."""
        if self.path is not None:
            yield from self._sqlite()
        else:
            yield from self._postgres()

    def _sqlite_open(self) -> sqlite3.Connection:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        except (OSError, sqlite3.Error) as e:
            raise SharedTestDbError(
                f"Cannot open the shared-tests database {self.path} ({e}); check --data-dir."
            ) from e
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _sqlite(self):
        try:
            try:
                conn = self._sqlite_open()
            except sqlite3.DatabaseError as e:
                if not _damaged(e):
                    raise
                self._move_aside(e)  # found on opening: this call goes on with a new file, tables made
                conn = self._sqlite_open()
                for schema in self._schemas:
                    _Cursor(conn, "?").script(schema)
                conn.commit()
            with closing(conn), conn:
                yield _Cursor(conn, "?")
        except sqlite3.DatabaseError as e:
            if "no such table" in str(e):  # the file was replaced under us: the next call makes the tables
                self._made.clear()
            elif _damaged(e):
                self._move_aside(e)
                raise SharedTestDbError(
                    f"The shared-tests database {self.path} was damaged ({e}): it was moved aside and a new "
                    "one is made; tests made before are in the damaged file. Try again."
                ) from e
            raise SharedTestDbError(
                f"The shared-tests database {self.path} failed ({e}); try again in a moment."
            ) from e

    def _move_aside(self, error: Exception) -> None:
        assert self.path is not None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            damaged = self.path.with_name(self.path.name + suffix)
            if damaged.exists():
                damaged.replace(damaged.with_name(f"{DB_NAME}.damaged-{stamp}{suffix}"))
        logger.error("shared-tests database %s was damaged (%s): moved aside, a new one is made", self.path, error)

    def problem(self) -> str | None:
        """Why the shared tests cannot be stored right now, or None (writes nothing; a missing SQLite
        file is fine when its folder is writable: it is made on first use)."""
        if self.path is None:
            try:
                with self.connect() as c:
                    c.execute("SELECT 1").fetchall()
            except SharedTestDbError as e:
                return str(e)
            return None
        if not self.path.exists():
            folder = next((p for p in (self.path.parent, *self.path.parent.parents) if p.exists()), None)
            if folder is None or not os.access(folder, os.W_OK | os.X_OK):
                return f"the data folder {self.path.parent} cannot be created or written"
            return None
        try:
            uri = f"file:{self.path}?mode=rw"
            with closing(sqlite3.connect(uri, uri=True, timeout=PROBE_TIMEOUT_S)) as conn:
                conn.execute("SELECT name FROM sqlite_master").fetchall()
        except sqlite3.DatabaseError as e:
            if _damaged(e):
                return f"{self.path} is damaged ({e}); the next shared-test call moves it aside and starts a new one"
            return f"{self.path}: {e}"
        return None

    def _postgres(self):
        try:
            import psycopg
        except ImportError as e:
            raise SharedTestDbError(
                "CODEC_DATABASE_URL names a PostgreSQL server but psycopg is not installed: "
                "pip install 'codec-workbench[postgres]' (or -r requirements-postgres.txt)."
            ) from e
        try:
            conn = psycopg.connect(self.url, connect_timeout=5)
        except psycopg.Error as e:
            raise SharedTestDbError(
                f"Cannot reach the PostgreSQL server {self.describe()} ({e}); check CODEC_DATABASE_URL."
            ) from e
        try:
            with conn:  # commits on success, rolls back on an exception, closes
                yield _Cursor(conn, "%s")
        except psycopg.OperationalError as e:
            raise SharedTestDbError(
                f"The PostgreSQL server {self.describe()} failed ({e}); try again in a moment."
            ) from e


def _damaged(error: sqlite3.DatabaseError) -> bool:
    text = str(error).lower()
    return "not a database" in text or "malformed" in text or "file is encrypted" in text


class _Cursor:
    """``execute`` with ``?`` placeholders on either database; rows as tuples."""

    def __init__(self, conn, mark: str):
        self._conn, self._mark = conn, mark

    def execute(self, sql: str, args: tuple = ()):
        if self._mark != "?":
            sql = sql.replace("?", self._mark)
        return self._conn.execute(sql, args)

    def script(self, statements: str) -> None:
        """Several statements (the schema), one by one (comments dropped first: they may hold ";")."""
        code = "\n".join(line.split("--")[0] for line in statements.splitlines())
        for statement in code.split(";"):
            if statement.strip():
                self._conn.execute(statement)
