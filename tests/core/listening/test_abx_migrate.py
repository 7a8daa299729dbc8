"""Issue 26: a blind-test database written by the code before source ids (main's HEAD 92747b7,
``fixtures/abx_before_ids.sqlite3``, made as fixtures/README.md says), opened by this code: every
stored answer readable, by id; the one whose name maps to no source kept and marked; the old file
kept beside it; a second opening changes nothing."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

import pytest

from core.listening import abx, abx_db, abx_migrate, abx_store

FIXTURE = Path(__file__).parent / "fixtures" / "abx_before_ids.sqlite3"
# what the fixture's eight sessions were started with (fixtures/README.md), as ids: (A, B, detail)
EXPECTED = [
    ("original", "reconstruction", ""),
    ("original", "k2", ""),
    ("original", "k1", ""),
    ("reconstruction", "opus6", ""),
    ("original", "lp3.5", ""),
    ("original", "amr", ""),
    ("original", "compare", "/models/qwen-ft"),
    ("original", "", ""),  # "16 codebooks": no source has that name
]


@pytest.fixture
def old_db(tmp_path) -> Path:
    shutil.copy(FIXTURE, tmp_path / abx_db.DB_NAME)
    return tmp_path


def _old_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT session, trial, x_is, answer, correct, level, a_name FROM trials").fetchall()


def test_every_answer_of_an_old_database_is_readable_by_id(old_db, tmp_path):
    before = _old_rows(old_db / abx_db.DB_NAME)
    assert len(before) == 24  # 8 sessions of 3 trials
    out = abx_store.AbxStore(old_db).export_csv(tmp_path / "all.csv")  # opening migrates
    with open(out, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(before)
    by_answer = {(r["session"], int(r["trial"])): r for r in rows}
    for session, trial, x_is, answer, correct, _level, _a in before:  # every answer, unchanged
        row = by_answer[(session, trial)]
        assert (row["x_is"], row["answer"], int(row["correct"])) == (x_is, answer, correct)
    sessions = sorted(
        {r["session"] for r in rows}, key=lambda s: min(float(r["answered_at"]) for r in rows if r["session"] == s)
    )
    got = [next((r["a_source"], r["b_source"], r["b_detail"]) for r in rows if r["session"] == s) for s in sessions]
    assert got == EXPECTED


def test_an_answer_whose_name_maps_to_no_source_is_kept_and_marked(old_db):
    abx_store.AbxStore(old_db).export_csv(old_db / "all.csv")
    with sqlite3.connect(old_db / abx_db.DB_NAME) as conn:
        marked = conn.execute("SELECT b_source, stored_as FROM trials WHERE stored_as != ''").fetchall()
        unmarked = conn.execute("SELECT COUNT(*) FROM trials WHERE stored_as = '' AND b_source != ''").fetchone()[0]
    assert marked == [("", "B: 16 codebooks")] * 3
    assert unmarked == 21


def test_the_old_file_is_kept_and_a_second_opening_changes_nothing(old_db):
    abx_store.AbxStore(old_db).export_csv(old_db / "one.csv")
    backup = old_db / (abx_db.DB_NAME + abx_migrate.BACKUP_SUFFIX)
    assert _old_rows(backup) == _old_rows(FIXTURE)  # the file as it was, beside the new one
    abx_store.AbxStore(old_db).export_csv(old_db / "two.csv")
    assert (old_db / "one.csv").read_bytes() == (old_db / "two.csv").read_bytes()
    with sqlite3.connect(old_db / abx_db.DB_NAME) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == abx_migrate.SCHEMA_VERSION


def test_new_sessions_work_beside_migrated_ones_and_the_sentence_names_them_by_id(old_db):
    store = abx_store.AbxStore(old_db)
    token, trial = store.start("f" * 64, "opus6", trials=2, seed=3, a_source=abx.A_CODEC)
    while trial is not None:
        trial = store.answer(token, trial.index, "A")
    result = store.results(token)
    assert (result.a_source, result.b_source) == ("reconstruction", "opus6")
    assert "(A: codec 2.2 kbit/s; B: Opus 6 kbit/s)" in result.sentence
    assert len(store.export_csv(old_db / "all.csv").read_text().splitlines()) == 1 + 24 + 2


def test_the_schema_before_a_name_migrates_too(tmp_path):
    """The first schema (no a_name column): A was always the original."""
    conn = sqlite3.connect(tmp_path / abx_db.DB_NAME)
    conn.executescript(
        "CREATE TABLE sessions (session TEXT PRIMARY KEY, created REAL, clip_sha256 TEXT, level TEXT, seed INTEGER,"
        " plan TEXT, presented_at REAL);"
        "CREATE TABLE trials (session TEXT, trial INTEGER, clip_sha256 TEXT, level TEXT, x_is TEXT, answer TEXT,"
        " correct INTEGER, seconds REAL, answered_at REAL, PRIMARY KEY (session, trial));"
        "INSERT INTO sessions VALUES ('s', 1.0, 'sha', '4 of 16 codebooks, 550 bit/s', 1, 'AB', 1.0);"
        "INSERT INTO trials VALUES ('s', 0, 'sha', '4 of 16 codebooks, 550 bit/s', 'A', 'A', 1, 2.0, 3.0);"
    )
    conn.commit()
    conn.close()
    out = abx_store.AbxStore(tmp_path).export_csv(tmp_path / "x.csv")
    with open(out, encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["a_source"], row["b_source"], row["stored_as"], row["correct"]) == ("original", "k4", "", "1")


def test_every_name_the_old_code_wrote_maps_to_an_id():
    assert abx_migrate.legacy_source("Phone call (AMR-NB 12.2 kbit/s)") == ("amr", "")
    assert abx_migrate.legacy_source("2 of 16 codebooks, 275 bit/s") == ("k2", "")
    assert abx_migrate.legacy_source("16 of 16 codebooks, 2200 bit/s") == ("reconstruction", "")
    assert abx_migrate.legacy_source("codec, 16 of 16 codebooks, 2200 bit/s") == ("reconstruction", "")
    assert abx_migrate.legacy_source("second checkpoint ") == ("", "")
