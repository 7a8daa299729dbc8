"""Where shared listening tests are stored: the embedded SQLite file (the default) or a PostgreSQL
server named by one setting (``CODEC_DATABASE_URL=postgresql://user@host/db``), with the same schema.

SQLite: ``room.sqlite3`` under the data folder, WAL, a busy timeout, a connection per call, so N
replicas on one host (``deploy/replicas.py`` behind nginx) share one file and see one test wherever
a link lands. PostgreSQL (``psycopg``, the ``postgres`` extra): a connection per call too; for
several hosts. The SQL the store writes is portable: ``?`` placeholders (turned into ``%s`` for
psycopg), ``ON CONFLICT DO NOTHING``, ``DOUBLE PRECISION`` for times.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path

from core.errors import CodecError

logger = logging.getLogger(__name__)

DB_NAME = "room.sqlite3"  # file under the data folder
BUSY_TIMEOUT_S = 5.0  # longest wait for a locked SQLite file


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

    def with_tables(self, schema: str) -> Database:
        """This database, once ``schema``'s tables are there: made if missing, once per object
        (``CREATE ... IF NOT EXISTS``: another replica making them at the same time is harmless)."""
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

    def _sqlite(self):
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        except (OSError, sqlite3.Error) as e:
            raise SharedTestDbError(
                f"Cannot open the shared-tests database {self.path} ({e}); check --data-dir."
            ) from e
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            with closing(conn), conn:
                yield _Cursor(conn, "?")
        except sqlite3.OperationalError as e:
            raise SharedTestDbError(
                f"The shared-tests database {self.path} failed ({e}); try again in a moment."
            ) from e

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
