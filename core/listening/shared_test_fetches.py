"""Which sounds of a shared test each listener fetched, and when: answers that could not come from
listening are flagged.

A page cannot stop a listener from analysing the audio it was sent (a script can find ABX's X by
subtraction, or MUSHRA's hidden reference, in a few lines); what the server can see is timing, as
P.808 screens crowd raters by time and gold questions. Every audio request records its sound's
first fetch (the MUSHRA screen's condition, ``reference`` for the open reference; ABX's ``A``,
``B`` or ``X`` of a trial). An answer is flagged

- ``not_fetched``: it rates a sound (MUSHRA) or picks X (ABX) that listener never fetched;
- ``too_quick``: it came sooner after the first fetch of its screen or trial than the region lasts
  (no one can have heard it once through).

A flag is a screen, not a proof (a patient script passes; a listener who skips ahead is flagged):
the owner's panel and the CSV show it and a flagged answer is left out of the pooled result like a
screening exclusion, unless the owner counts the excluded in.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from core.listening.shared_test_db import Database

NOT_FETCHED = "not_fetched"
TOO_QUICK = "too_quick"

SCHEMA = """
CREATE TABLE IF NOT EXISTS room_fetches (
    test TEXT NOT NULL,
    listener TEXT NOT NULL,           -- sha256 of the listener key
    item INTEGER NOT NULL,            -- the MUSHRA screen or the ABX trial
    sound TEXT NOT NULL,              -- MUSHRA: a condition id or 'reference'; ABX: 'A', 'B' or 'X'
    first_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (test, listener, item, sound)
)
"""


class Fetches:
    """The first fetch of each sound by each listener, in the shared tests' database."""

    def __init__(self, db: Database, clock=time.time):
        self.db = db
        self._clock = clock

    def _conn(self):
        return self.db.with_tables(SCHEMA).connect()

    def record(self, test: str, listener: str, item: int, sound: str) -> None:
        """Note that ``listener`` fetched ``sound`` of ``item`` now (the first time only counts)."""
        with self._conn() as c:
            c.execute(
                "INSERT INTO room_fetches (test, listener, item, sound, first_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (test, listener, item, sound) DO NOTHING",
                (test, listener, int(item), sound, self._clock()),
            )

    def of_test(self, test: str) -> dict[tuple[str, int], dict[str, float]]:
        """(listener, item) -> {sound: first fetch time} for one test."""
        with self._conn() as c:
            rows = c.execute(
                "SELECT listener, item, sound, first_at FROM room_fetches WHERE test = ?", (test,)
            ).fetchall()
        out: dict[tuple[str, int], dict[str, float]] = {}
        for who, item, sound, at in rows:
            out.setdefault((who, int(item)), {})[sound] = float(at)
        return out

    def forget(self, test: str) -> None:
        with self._conn() as c:
            c.execute("DELETE FROM room_fetches WHERE test = ?", (test,))


def flag(fetched: dict[str, float], answered_at: float, about: Iterable[str], seconds: float) -> str:
    """ "" for an answer that could come from listening; else why not (:data:`NOT_FETCHED`,
    :data:`TOO_QUICK`). ``fetched``: the screen's or trial's first fetches; ``about``: the sounds
    the answer judges; ``seconds``: the region's length."""
    if any(sound not in fetched for sound in about):
        return NOT_FETCHED
    if fetched and answered_at - min(fetched.values()) < seconds:
        return TOO_QUICK
    return ""


def flag_rows(fetched: dict[tuple[str, int], dict[str, float]], seconds: float, ratings, answers):
    """(a flag per rating row, a flag per answer row) of one test. Rating rows start (listener, item,
    condition) and answer rows (listener, trial); both end with the time they were sent. A MUSHRA
    screen's ratings are about the conditions rated on it; an ABX answer is about X."""
    rated: dict[tuple[str, int], list[str]] = {}
    for who, item, condition, *_rest in ratings:
        rated.setdefault((who, int(item)), []).append(condition)
    return (
        [flag(fetched.get((r[0], int(r[1])), {}), r[-1], rated[(r[0], int(r[1]))], seconds) for r in ratings],
        [flag(fetched.get((a[0], int(a[1])), {}), a[-1], ("X",), seconds) for a in answers],
    )
