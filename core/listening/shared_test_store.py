"""Shared listening tests: a MUSHRA or ABX test that listeners take from a link, stored as they answer.

A test is made by its owner (from a round trip's result or the blind-test tab) with the region's
audio of every condition; it returns two secrets made by ``secrets``: the **link** (192 random bits,
what listeners open) and the **owner key** (256 bits, what the owner's page holds to read the
responses and close the test). The store keeps only their SHA-256. A listener who opens the link
joins with at most a nickname and gets a listener key of their own (192 bits); every answer needs
it, so nobody answers for another listener, and a screen (MUSHRA) or trial (ABX) once answered
cannot be answered again (a replay gets a clear error, nothing is changed). A closed or expired test
refuses answers and says which.

Conditions are source ids (``core.judging.sources``), stored by id; the audio of each condition
and item is stored with the test as 16-bit samples, in the database itself, so every replica and
every host that shares the database serves the same test (``core.listening.shared_test_db``).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
import unicodedata

import numpy as np

from core.codec import SAMPLE_RATE
from core.listening import abx, mushra, shared_test_fetches, shared_test_upkeep
from core.listening.shared_test_db import Database
from core.listening.shared_test_keys import LINK_BYTES, LISTENER_BYTES, OWNER_BYTES, key_hash
from core.listening.shared_test_schema import KINDS, SCHEMA, Listener, SharedTestError, TestInfo

DEFAULT_TTL_S = 7 * 24 * 3600.0  # a test expires 7 days after it is made unless the owner says otherwise
MAX_TTL_S = 90 * 24 * 3600.0
MAX_NICKNAME = 40  # characters
MAX_LISTENERS = 500  # per test


def clean_nickname(value) -> str:
    """At most MAX_NICKNAME printable characters, spaces squeezed ("" for none)."""
    text = "".join(ch for ch in str(value or "") if unicodedata.category(ch)[0] not in "C")
    return " ".join(text.split())[:MAX_NICKNAME]


class SharedTestStore:
    """Shared tests in a :class:`Database`. Every call opens its own connection (safe across
    threads, processes and replicas); answers are committed as they come."""

    def __init__(self, db: Database, clock=time.time):
        self.db = db
        self._clock = clock
        self.fetches = shared_test_fetches.Fetches(db, clock)  # what each listener fetched, and when
        self.upkeep = shared_test_upkeep.Upkeep(db, clock)  # caps, and finished tests' audio deleted

    def _conn(self):
        """A connection; the first one makes the tables if they are missing."""
        return self.db.with_tables(SCHEMA).connect()

    # ---- the owner -----------------------------------------------------------------------------
    def create(
        self,
        kind: str,
        clip_sha256: str,
        plan: dict,
        audio: dict[tuple[int, str], np.ndarray],
        ttl_s: float = DEFAULT_TTL_S,
        visitor: str = "",
    ) -> tuple[str, str]:
        """A new test: (link, owner key). ``audio``: (item, source id) -> 16-bit samples; ``visitor``:
        the owner's client address (the caps of ``core.listening.shared_test_upkeep``)."""
        if kind not in KINDS:
            raise SharedTestError(f"A shared test is 'mushra' or 'abx' (got {kind!r}).")
        if not (isinstance(ttl_s, int | float) and 60 <= ttl_s <= MAX_TTL_S):
            raise SharedTestError(f"A test expires after 1 minute to {MAX_TTL_S / 86400:.0f} days (got {ttl_s!r} s).")
        lengths = [np.asarray(x).size for x in audio.values()]
        self.upkeep.admit(visitor, 2 * sum(lengths))  # past a cap: refused in words, nothing stored
        plan = {**plan, "seconds": min(lengths) / SAMPLE_RATE if lengths else 0.0}  # the region: times answers
        link, owner = secrets.token_urlsafe(LINK_BYTES), secrets.token_urlsafe(OWNER_BYTES)
        now = self._clock()
        test = key_hash(link)
        with self._conn() as c:
            c.execute(
                "INSERT INTO room_tests (test, owner, kind, created, expires, closed, clip_sha256, plan, seed) "
                "VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?)",
                (
                    test,
                    key_hash(owner, "key"),
                    kind,
                    now,
                    now + ttl_s,
                    clip_sha256,
                    json.dumps(plan),
                    secrets.randbits(62),
                ),
            )
            for (item, source), steps in audio.items():
                pcm = np.asarray(steps, dtype="<i2").tobytes()
                c.execute(
                    "INSERT INTO room_audio (test, item, source, pcm) VALUES (?, ?, ?, ?)", (test, item, source, pcm)
                )
        self.upkeep.made(test, visitor, 2 * sum(lengths))
        return link, owner

    def owned(self, link: str, owner_key: str) -> TestInfo:
        """The test, for its owner only (SharedTestError otherwise)."""
        with self._conn() as c:
            info = self._test(c, link)
            row = c.execute("SELECT owner FROM room_tests WHERE test = ?", (info.test,)).fetchone()
        if row[0] != key_hash(owner_key, "owner key"):
            raise SharedTestError("Only the owner of this test can see its responses or close it.", "forbidden")
        return info

    def close(self, link: str, owner_key: str) -> None:
        """Stop new answers (those given are kept)."""
        info = self.owned(link, owner_key)
        with self._conn() as c:
            c.execute("UPDATE room_tests SET closed = ? WHERE test = ? AND closed IS NULL", (self._clock(), info.test))

    def responses(self, link: str, owner_key: str) -> dict:
        """Everything the listeners gave, by id: listeners, ratings (MUSHRA), answers (ABX)."""
        info = self.owned(link, owner_key)
        with self._conn() as c:
            listeners = c.execute(
                "SELECT listener, number, nickname, joined FROM room_listeners WHERE test = ? ORDER BY number",
                (info.test,),
            ).fetchall()
            names = {who: n for who, n, _nick, _at in listeners}
            ratings = c.execute(
                "SELECT listener, item, condition, rating, at FROM room_ratings WHERE test = ? ORDER BY at, item",
                (info.test,),
            ).fetchall()
            answers = c.execute(
                "SELECT listener, trial, x_is, answer, correct, at FROM room_abx WHERE test = ? ORDER BY at, trial",
                (info.test,),
            ).fetchall()
        rating_flags, answer_flags = shared_test_fetches.flag_rows(
            self.fetches.of_test(info.test), float(info.plan.get("seconds") or 0.0), ratings, answers
        )
        return {
            "info": info,
            "listeners": [
                {"listener": f"L{n}", "number": n, "nickname": nick, "joined": at} for _w, n, nick, at in listeners
            ],
            "ratings": [
                {"listener": f"L{names[w]}", "item": i, "condition": cond, "rating": r, "at": at, "flag": f}
                for (w, i, cond, r, at), f in zip(ratings, rating_flags, strict=True)
            ],
            "answers": [
                {"listener": f"L{names[w]}", "trial": t, "x_is": x, "answer": a, "correct": k, "at": at, "flag": f}
                for (w, t, x, a, k, at), f in zip(answers, answer_flags, strict=True)
            ],
        }

    def export_rows(self) -> list[dict]:
        """Every rating and answer of every test, by id (the operator's export: tests are named by
        the first 12 characters of their link's hash, listeners by number)."""
        with self._conn() as c:
            tests = {
                t: (kind, json.loads(plan)) for t, kind, plan in c.execute("SELECT test, kind, plan FROM room_tests")
            }
            numbers = {
                (t, w): (n, nick)
                for t, w, n, nick in c.execute("SELECT test, listener, number, nickname FROM room_listeners").fetchall()
            }
            ratings = c.execute("SELECT test, listener, item, condition, rating, at FROM room_ratings").fetchall()
            answers = c.execute("SELECT test, listener, trial, x_is, answer, correct, at FROM room_abx").fetchall()
        rows = []
        for t, (kind, plan) in tests.items():
            mine = [r[1:] for r in ratings if r[0] == t], [a[1:] for a in answers if a[0] == t]
            flags = shared_test_fetches.flag_rows(self.fetches.of_test(t), float(plan.get("seconds") or 0.0), *mine)
            for (w, item, condition, rating, at), f in zip(mine[0], flags[0], strict=True):
                n, nick = numbers[(t, w)]
                rows.append(
                    {"test": t[:12], "kind": kind, "listener": f"L{n}", "nickname": nick, "item": item}
                    | {"condition": condition, "rating": rating, "at": at, "flag": f}
                )
            for (w, trial, x_is, answer, correct, at), f in zip(mine[1], flags[1], strict=True):
                n, nick = numbers[(t, w)]
                rows.append(
                    {"test": t[:12], "kind": kind, "listener": f"L{n}", "nickname": nick, "trial": trial}
                    | {"x_is": x_is, "answer": answer, "correct": correct, "at": at, "flag": f}
                )
        return sorted(rows, key=lambda r: (r["test"], r["at"]))

    # ---- listeners -----------------------------------------------------------------------------
    def open_test(self, link: str) -> TestInfo:
        """The test a link names, open or not (its state says)."""
        with self._conn() as c:
            return self._test(c, link)

    def join(self, link: str, nickname="") -> tuple[str, Listener]:
        """A new listener of an open test: (their key, who they are)."""
        key = secrets.token_urlsafe(LISTENER_BYTES)
        self.upkeep.maybe_sweep()
        with self._conn() as c:
            info = self._open(c, link)
            count = c.execute("SELECT COUNT(*) FROM room_listeners WHERE test = ?", (info.test,)).fetchone()[0]
            if count >= MAX_LISTENERS:
                raise SharedTestError(f"It has its {MAX_LISTENERS} listeners; ask its owner for a new one.", "full")
            number = c.execute(
                "SELECT COALESCE(MAX(number), 0) + 1 FROM room_listeners WHERE test = ?", (info.test,)
            ).fetchone()[0]
            who = Listener(key_hash(key, "listener key"), int(number), clean_nickname(nickname))
            c.execute(
                "INSERT INTO room_listeners (test, listener, number, nickname, joined) VALUES (?, ?, ?, ?, ?)",
                (info.test, who.listener, who.number, who.nickname, self._clock()),
            )
        return key, who

    def listener(self, link: str, key: str) -> tuple[TestInfo, Listener]:
        with self._conn() as c:
            info = self._test(c, link)
            return info, self._listener(c, info, key)

    def serving(self, link: str, key: str) -> tuple[TestInfo, Listener]:
        """The test and its listener while the test is open (a closed or expired test serves no sound)."""
        with self._conn() as c:
            info = self._open(c, link)
            return info, self._listener(c, info, key)

    def audio(self, link: str, item: int, source: str) -> np.ndarray:
        """One condition's 16-bit samples of one item (the web layer re-dithers them per request), while
        the test is open: a closed or expired test serves no sound."""
        with self._conn() as c:
            info = self._open(c, link)
            row = c.execute(
                "SELECT pcm FROM room_audio WHERE test = ? AND item = ? AND source = ?", (info.test, item, source)
            ).fetchone()
        if row is None:
            raise SharedTestError("This sound is not part of the test.", "unknown")
        return np.frombuffer(bytes(row[0]), dtype="<i2")

    def rated_items(self, link: str, key: str) -> set[int]:
        with self._conn() as c:
            info = self._test(c, link)
            who = self._listener(c, info, key)
            rows = c.execute(
                "SELECT DISTINCT item FROM room_ratings WHERE test = ? AND listener = ?", (info.test, who.listener)
            ).fetchall()
        return {int(r[0]) for r in rows}

    def rate(self, link: str, key: str, item: int, ratings: dict[str, int]) -> None:
        """One MUSHRA screen's ratings (condition id -> 0..100), all of its conditions at once, once."""
        with self._conn() as c:
            info = self._open(c, link)
            if info.kind != "mushra":
                raise SharedTestError("This test is a blind ABX test: answer A or B.")
            who = self._listener(c, info, key)
            plan = mushra.Plan.from_dict(info.plan)
            if not (isinstance(item, int) and 0 <= item < len(plan.items)):
                raise SharedTestError(f"Screen {item!r} is not in this test (it has {len(plan.items)}).")
            if set(ratings) != set(plan.conditions):
                raise SharedTestError("Rate every sound on the screen before sending (each slider once).")
            checked = {c_id: mushra.check_rating(v) for c_id, v in ratings.items()}
            done = c.execute(
                "SELECT COUNT(*) FROM room_ratings WHERE test = ? AND listener = ? AND item = ?",
                (info.test, who.listener, item),
            ).fetchone()[0]
            if done:
                raise SharedTestError("This screen's ratings were already sent; they cannot be changed.", "replay")
            now = self._clock()
            for condition, rating in checked.items():
                c.execute(
                    "INSERT INTO room_ratings (test, listener, item, condition, rating, at) VALUES (?, ?, ?, ?, ?, ?)",
                    (info.test, who.listener, item, condition, rating, now),
                )

    def abx_plan(self, info: TestInfo, who: Listener) -> str:
        """X per trial for this listener (A or B): their own random plan, from the test's secret seed."""
        seed = int(hashlib.sha256(f"{info.seed}:{who.listener}".encode()).hexdigest()[:15], 16)
        return abx.plan_trials(int(info.plan["trials"]), seed)

    def abx_done(self, link: str, key: str) -> int:
        with self._conn() as c:
            info = self._test(c, link)
            who = self._listener(c, info, key)
            return int(
                c.execute(
                    "SELECT COUNT(*) FROM room_abx WHERE test = ? AND listener = ?", (info.test, who.listener)
                ).fetchone()[0]
            )

    def answer_abx(self, link: str, key: str, trial: int, answer: str) -> int:
        """Answer ``trial`` (the current one only); returns the next trial's number."""
        answer = str(answer).strip().upper()
        if answer not in abx.CHOICES:
            raise SharedTestError(f"Answer A or B (got {answer!r}).")
        with self._conn() as c:
            info = self._open(c, link)
            if info.kind != "abx":
                raise SharedTestError("This test is a MUSHRA test: rate the sounds with the sliders.")
            who = self._listener(c, info, key)
            plan = self.abx_plan(info, who)
            done = c.execute(
                "SELECT COUNT(*) FROM room_abx WHERE test = ? AND listener = ?", (info.test, who.listener)
            ).fetchone()[0]
            if done >= len(plan):
                raise SharedTestError("You have answered every trial of this test.", "replay")
            if trial != done:
                raise SharedTestError(f"Trial {trial + 1} is not the current one (trial {done + 1}).", "replay")
            x_is = plan[trial]
            c.execute(
                "INSERT INTO room_abx (test, listener, trial, x_is, answer, correct, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (info.test, who.listener, trial, x_is, answer, int(answer == x_is), self._clock()),
            )
        return trial + 1

    # ---- reading -------------------------------------------------------------------------------
    def _test(self, c, link: str) -> TestInfo:
        row = c.execute(
            "SELECT test, kind, created, expires, closed, clip_sha256, plan, seed FROM room_tests WHERE test = ?",
            (key_hash(link),),
        ).fetchone()
        if row is None:
            raise SharedTestError("This test does not exist (the link may be mistyped or the test removed).", "unknown")
        test, kind, created, expires, closed, sha, plan, seed = row
        return TestInfo(test, kind, created, expires, closed, sha, json.loads(plan), int(seed))

    def _open(self, c, link: str) -> TestInfo:
        info = self._test(c, link)
        state = info.state(self._clock())
        if state == "closed":
            raise SharedTestError(
                "This test is closed: its owner stopped new answers. Thank you for listening.", "closed"
            )
        if state == "expired":
            raise SharedTestError("This test has expired: ask its owner for a new link.", "expired")
        return info

    def _listener(self, c, info: TestInfo, key: str) -> Listener:
        row = c.execute(
            "SELECT listener, number, nickname FROM room_listeners WHERE test = ? AND listener = ?",
            (info.test, key_hash(key, "listener key")),
        ).fetchone()
        if row is None:
            raise SharedTestError("You have not joined this test yet: open its link again.", "forbidden")
        return Listener(row[0], int(row[1]), row[2])


def store_for(settings) -> SharedTestStore:
    """The shared tests' store a server's settings name (``data_dir``, ``database_url``)."""
    return SharedTestStore(Database(settings.data_dir, url=settings.database_url or None))
