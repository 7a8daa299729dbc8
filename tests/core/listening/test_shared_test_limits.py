"""The shared tests' rate limits (core.listening.shared_test_limits) on the SQLite file the replicas of one host
share; the same body runs on PostgreSQL in test_shared_test_postgres.py."""

from __future__ import annotations

from shared_test_cases import limits_flow

from core.listening import shared_test_db
from core.listening.shared_test_limits import SharedTestLimits


def test_two_replicas_on_one_sqlite_file_share_the_limits(tmp_path):
    limits_flow(lambda: shared_test_db.Database(tmp_path))


def test_what_is_counted_is_stored_as_a_hash(tmp_path):
    limits = SharedTestLimits(shared_test_db.Database(tmp_path), clock=lambda: 60_000.0)
    assert limits.allow("answers from 203.0.113.9", 5)
    stored = b"".join(p.read_bytes() for p in tmp_path.glob(shared_test_db.DB_NAME + "*"))
    assert stored and b"203.0.113.9" not in stored
