"""The blind test's store: sessions and answers in SQLite (:mod:`core.listening.abx` plans the
trials and scores them).

Sessions are private: ``start`` returns a token made by ``secrets`` (256 bits) that only the
client holds; the store keeps its SHA-256, never the token, and every read or write needs the
token. What A and B are is stored by source id (``a_source``, ``b_source``; the second checkpoint's
model path as ``b_detail``); a database written before ids is rewritten once on opening
(:mod:`core.listening.abx_migrate`: every answer kept, those whose names map to no id marked in
``stored_as``). Answers are written to SQLite as they come (WAL, one connection per call), so they
survive a restart of the server. The file itself (tables, repair, faults in words, and
``store_problem`` for /ready and the doctor) is :mod:`core.listening.abx_db`.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from core import csv_cells
from core.listening.abx import A_ORIGINAL, CHOICES, DEFAULT_TRIALS, AbxError, Score, plan_trials, score
from core.listening.abx_db import BUSY_TIMEOUT_S, AbxFile

TOKEN_BYTES = 32  # 256 random bits per session token
CSV_FIELDS = (
    "session",
    "trial",
    "clip_sha256",
    "a_source",  # what A is: a source id
    "b_source",  # what B is: a source id
    "b_detail",  # the second checkpoint's model path ("" for other sources)
    "stored_as",  # names from before ids that map to no source ("" for every answer stored by id)
    "x_is",
    "answer",
    "correct",
    "seconds",
    "answered_at",
)
SESSION_TTL_S = 3600.0  # a session with no answer for this long is expired (Settings.abx_session_ttl_s)
MAX_PENDING = 10_000  # sessions started and not yet answered, kept in memory at most (oldest dropped)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")  # what secrets.token_urlsafe makes


def clip_checksum(samples) -> str:
    """SHA-256 of the clip's float32 samples: the same audio gives the same checksum."""
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(samples, dtype=np.float32).tobytes()).hexdigest()


def _session_id(token) -> str:
    """The stored form of a token; AbxError for anything that cannot be one (None, a lone surrogate...)."""
    if not token:
        raise AbxError("No blind test is running: press Start first.")
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise AbxError("This blind test is unknown here; press Start for a new one.")
    return hashlib.sha256(token.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class Trial:
    index: int  # 0-based trial number
    total: int  # trials in the test
    x_is: str  # "A" or "B": only for building X's audio, never shown before the end


@dataclass(frozen=True)
class _Row:
    """A session as the store reads it (from SQLite or from memory)."""

    session: str
    clip_sha256: str
    plan: str
    presented_at: float
    a_source: str
    b_source: str
    b_detail: str


@dataclass(frozen=True)
class _Pending:
    """A session planned by ``start`` and not yet in SQLite: written with its first answer."""

    created: float
    clip_sha256: str
    a_source: str
    b_source: str
    b_detail: str
    seed: int
    plan: str


class AbxStore:
    """Sessions and answers in ``data_dir / DB_NAME``. Thread-safe; the file is created on first use.

    Robust by design: ``start`` touches no file (the session is kept in memory until
    its first answer writes it, so a slow or locked database never holds the model's queue); every
    connection makes the tables if they are missing (a deleted file is recreated) and waits at most
    ``busy_timeout_s`` for a lock; a damaged file is moved aside (``abx.sqlite3.damaged-<time>``) and
    a new one made, once per call. Sessions without an answer for ``session_ttl_s`` are expired:
    answers to them are refused and unanswered ones are forgotten."""

    def __init__(
        self,
        data_dir: str | Path,
        clock=time.time,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        session_ttl_s: float = SESSION_TTL_S,
    ):
        self.file = AbxFile(data_dir, busy_timeout_s)  # core.listening.abx_db: the tables, repair, faults in words
        self.path = self.file.path
        self._clock = clock
        self._lock = self.file.lock  # one lock for the file and the sessions kept in memory
        self.session_ttl_s = session_ttl_s
        self._pending: OrderedDict[str, _Pending] = OrderedDict()

    def _db(self):
        return self.file.connect()

    # ---- sessions -----------------------------------------------------------------------------
    def start(
        self,
        clip_sha256: str,
        b_source: str,
        trials: int = DEFAULT_TRIALS,
        seed: int | None = None,
        a_source: str = A_ORIGINAL,
        b_detail: str = "",
    ) -> tuple[str, Trial]:
        """A new session: (its secret token, the first trial). ``b_source``, ``a_source``: the source
        ids of B and A; ``b_detail``: the second checkpoint's model path. Writes nothing yet."""
        seed = secrets.randbits(63) if seed is None else int(seed)
        plan = plan_trials(trials, seed)
        token = secrets.token_urlsafe(TOKEN_BYTES)
        now = self._clock()
        with self._lock:
            self._forget_stale_pending(now)
            self._pending[_session_id(token)] = _Pending(now, clip_sha256, a_source, b_source, b_detail, seed, plan)
            while len(self._pending) > MAX_PENDING:
                self._pending.popitem(last=False)
        return token, Trial(0, len(plan), plan[0])

    def _forget_stale_pending(self, now: float) -> None:
        cutoff = now - self.session_ttl_s
        for sid in [sid for sid, p in self._pending.items() if p.created < cutoff]:
            del self._pending[sid]

    def _session(self, conn: sqlite3.Connection, token: str) -> _Row:
        sid = _session_id(token)
        row = conn.execute(
            "SELECT session, clip_sha256, plan, presented_at, a_source, b_source, b_detail FROM sessions "
            "WHERE session = ?",
            (sid,),
        ).fetchone()
        if row is not None:
            return _Row(*row)
        pending = self._pending.get(sid)
        if pending is None:
            raise AbxError(
                "This blind test is unknown here (expired, another server or a removed data folder); "
                "press Start for a new one."
            )
        return _Row(
            sid,
            pending.clip_sha256,
            pending.plan,
            pending.created,
            pending.a_source,
            pending.b_source,
            pending.b_detail,
        )

    def _write_pending(self, conn: sqlite3.Connection, session: str) -> None:
        pending = self._pending.pop(session, None)
        if pending is not None:
            conn.execute(
                "INSERT OR IGNORE INTO sessions (session, created, clip_sha256, a_source, b_source, b_detail, "
                "seed, plan, presented_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session,
                    pending.created,
                    pending.clip_sha256,
                    pending.a_source,
                    pending.b_source,
                    pending.b_detail,
                    pending.seed,
                    pending.plan,
                    pending.created,
                ),
            )

    def answer(self, token: str, trial: int, answer: str) -> Trial | None:
        """Record the answer to ``trial``; return the next trial, or None after the last."""
        answer = str(answer).strip().upper()
        if answer not in CHOICES:
            raise AbxError(f"Answer A or B (got {answer!r}).")
        with self._db() as conn:
            row = self._session(conn, token)
            session, plan, presented_at = row.session, row.plan, row.presented_at
            done = conn.execute("SELECT COUNT(*) FROM trials WHERE session = ?", (session,)).fetchone()[0]
            if done >= len(plan):
                raise AbxError("This blind test is finished; see the results or press Start for a new one.")
            if trial != done:
                raise AbxError(f"Trial {trial + 1} is not the current one (trial {done + 1}); answer that one.")
            now = self._clock()
            if now - presented_at > self.session_ttl_s:
                raise AbxError(
                    f"This blind test expired (no answer for over {self.session_ttl_s / 60:.0f} min); "
                    "press Start for a new one."
                )
            self._write_pending(conn, session)
            x_is = plan[trial]
            conn.execute(
                "INSERT INTO trials (session, trial, clip_sha256, a_source, b_source, b_detail, x_is, answer, "
                "correct, seconds, answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session,
                    trial,
                    row.clip_sha256,
                    row.a_source,
                    row.b_source,
                    row.b_detail,
                    x_is,
                    answer,
                    int(answer == x_is),
                    now - presented_at,
                    now,
                ),
            )
            conn.execute("UPDATE sessions SET presented_at = ? WHERE session = ?", (now, session))
        nxt = trial + 1
        return Trial(nxt, len(plan), plan[nxt]) if nxt < len(plan) else None

    def current(self, token: str) -> Trial | None:
        """The trial waiting for an answer (None when all are answered)."""
        with self._db() as conn:
            row = self._session(conn, token)
            done = conn.execute("SELECT COUNT(*) FROM trials WHERE session = ?", (row.session,)).fetchone()[0]
        plan = row.plan
        return Trial(done, len(plan), plan[done]) if done < len(plan) else None

    def rows(self, token: str) -> list[dict]:
        """This session's answered trials, in order (the answers are revealed only through here)."""
        with self._db() as conn:
            session = self._session(conn, token).session
            return self._rows(conn, "WHERE session = ?", (session,))

    def results(self, token: str) -> Score:
        """The score so far (the whole test once every trial is answered). Callers show it only at
        the end; before, only :meth:`progress`."""
        with self._db() as conn:
            row = self._session(conn, token)
            correct, answered = conn.execute(
                "SELECT COALESCE(SUM(correct), 0), COUNT(*) FROM trials WHERE session = ?", (row.session,)
            ).fetchone()
        return score(int(correct), int(answered), len(row.plan), row.b_source, row.a_source, row.b_detail)

    def progress(self, token: str) -> tuple[int, int]:
        """(trials answered, trials planned): all that may be said before the last answer."""
        with self._db() as conn:
            row = self._session(conn, token)
            answered = conn.execute("SELECT COUNT(*) FROM trials WHERE session = ?", (row.session,)).fetchone()[0]
        return int(answered), len(row.plan)

    def export_csv(self, path: str | Path, token: str | None = None) -> Path:
        """Write answered trials as CSV to a new file: one session's (with its token) or, for the
        operator, every session's (token None). The session column is the token's hash."""
        with self._db() as conn:
            if token is None:
                rows = self._rows(conn, "", ())
            else:
                rows = self._rows(conn, "WHERE session = ?", (self._session(conn, token).session,))
        path = Path(path)
        with open(path, "x", newline="", encoding="utf-8") as f:
            writer = csv_cells.dict_writer(f, fieldnames=CSV_FIELDS)
            writer.writeheader()
            writer.writerows(rows)
        return path

    @staticmethod
    def _rows(conn: sqlite3.Connection, where: str, args: tuple) -> list[dict]:
        cursor = conn.execute(f"SELECT {', '.join(CSV_FIELDS)} FROM trials {where} ORDER BY answered_at, trial", args)
        return [dict(zip(CSV_FIELDS, row, strict=True)) for row in cursor]
