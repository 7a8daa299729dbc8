"""Blind-test databases written before the store kept source ids: their English names turned into ids.

Until this version the store kept what A and B were as English text ("2 of 16 codebooks, 275 bit/s",
"Opus 6 kbit/s", "codec, 16 of 16 codebooks, 2200 bit/s", "second checkpoint /models/x"), and found
them again by matching that text; renaming a label orphaned the answers. Now A and B are source ids
(``core.judging.sources``). :func:`migrate` rewrites an old database once, in one transaction:

- every text the old code could write maps to its id through :data:`LEGACY_NAMES`, a table of those
  texts frozen here as the old code made them (so a later rename of a label changes nothing here);
- "second checkpoint <model>" maps to the second checkpoint's id, the model path kept as its detail;
- anything else (an API caller's free text) is **kept and marked**: the id is "" and ``stored_as``
  holds the text. No answer is dropped.

The file as it was is copied beside it first (``abx.sqlite3.before-ids``). Databases made by this
version carry ``PRAGMA user_version = SCHEMA_VERSION`` and are left alone.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

from core.codec import NUM_CODEBOOKS, bitrate_bps

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 2  # 0/1: English names (1 added A's name); 2: source ids
BACKUP_SUFFIX = ".before-ids"  # the old file, copied before it is rewritten
_SECOND_PREFIX = "second checkpoint "  # how the old code named the second checkpoint, before its model path


def _old_level_name(codebooks: int) -> str:
    """``core.listening.abx.level_name`` as it was: "2 of 16 codebooks, 275 bit/s"."""
    return f"{codebooks} of {NUM_CODEBOOKS} codebooks, {bitrate_bps(codebooks):g} bit/s"


def _level_id(codebooks: int) -> str:
    return "reconstruction" if codebooks == NUM_CODEBOOKS else f"k{codebooks}"


# Every name the old code stored, and the source id it meant (frozen: do not follow later renames).
LEGACY_NAMES: dict[str, str] = {
    "original": "original",
    "codec, " + _old_level_name(16): "reconstruction",
    **{_old_level_name(k): _level_id(k) for k in range(1, NUM_CODEBOOKS + 1)},
    "Low-pass 3.5 kHz": "lp3.5",
    "Low-pass 7 kHz": "lp7",
    "Phone call (AMR-NB 12.2 kbit/s)": "amr",
    "Opus 6 kbit/s": "opus6",
    "Opus 12 kbit/s": "opus12",
    "MP3 32 kbit/s": "mp3",
}


def legacy_source(name: str) -> tuple[str, str]:
    """(source id, detail) for a name the old code stored; ("", "") when it cannot be mapped."""
    if name in LEGACY_NAMES:
        return LEGACY_NAMES[name], ""
    if name.startswith(_SECOND_PREFIX) and name[len(_SECOND_PREFIX) :].strip():
        return "compare", name[len(_SECOND_PREFIX) :].strip()
    return "", ""


def needs_migration(conn: sqlite3.Connection) -> bool:
    """Does this database hold the old tables (a ``level`` column of English names)?"""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
    return "level" in columns


def migrate(conn: sqlite3.Connection, path: Path, new_schema: str) -> int:
    """Rewrite an old database (``conn`` on ``path``) to ``new_schema``: returns the answers moved.
    One transaction: a failure leaves the old tables as they were."""
    if path.exists():
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        if not backup.exists():
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            shutil.copy2(path, backup)
    conn.create_function("cw_source", 1, lambda name: legacy_source(str(name))[0], deterministic=True)
    conn.create_function("cw_detail", 1, lambda name: legacy_source(str(name))[1], deterministic=True)
    conn.create_function("cw_unmapped", 2, _unmapped, deterministic=True)
    old_columns = {t: {row[1] for row in conn.execute(f"PRAGMA table_info({t})")} for t in ("sessions", "trials")}
    a_session = "a_name" if "a_name" in old_columns["sessions"] else "'original'"
    a_trial = "a_name" if "a_name" in old_columns["trials"] else "'original'"
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE sessions RENAME TO sessions_v1")
        conn.execute("ALTER TABLE trials RENAME TO trials_v1")
        for statement in _statements(new_schema):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO sessions (session, created, clip_sha256, a_source, b_source, b_detail, stored_as,"
            f" seed, plan, presented_at) SELECT session, created, clip_sha256, cw_source({a_session}), cw_source(level),"
            f" cw_detail(level), cw_unmapped({a_session}, level), seed, plan, presented_at FROM sessions_v1"
        )
        moved = conn.execute(
            "INSERT INTO trials (session, trial, clip_sha256, a_source, b_source, b_detail, stored_as, x_is,"
            f" answer, correct, seconds, answered_at) SELECT session, trial, clip_sha256, cw_source({a_trial}),"
            f" cw_source(level), cw_detail(level), cw_unmapped({a_trial}, level), x_is, answer, correct, seconds,"
            " answered_at FROM trials_v1"
        ).rowcount
        old = conn.execute("SELECT COUNT(*) FROM trials_v1").fetchone()[0]
        if moved != old:  # never: every row is copied, mapped or marked
            raise sqlite3.DatabaseError(f"migration copied {moved} of {old} answers")
        conn.execute("DROP TABLE trials_v1")
        conn.execute("DROP TABLE sessions_v1")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    unmapped = conn.execute("SELECT COUNT(*) FROM trials WHERE stored_as != ''").fetchone()[0]
    logger.warning(
        "blind-test database %s: %d answers now stored by source id (%d kept with names that map to no "
        "source, marked in stored_as); the old file is %s",
        path,
        moved,
        unmapped,
        path.name + BACKUP_SUFFIX,
    )
    return int(moved)


def _unmapped(a_name, level) -> str:
    """What of A's and B's stored names maps to no id ("" when both map): kept with the answer."""
    left = [f"{which}: {name}" for which, name in (("A", a_name), ("B", level)) if not legacy_source(str(name))[0]]
    return "; ".join(left)


def _statements(script: str) -> list[str]:
    """The CREATE statements of a schema script, one by one (``executescript`` would commit the
    transaction the migration runs in)."""
    code = "\n".join(line for line in script.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in code.split(";") if s.strip()]
