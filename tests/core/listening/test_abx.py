"""Blind ABX test: reproducible plans, the exact binomial p-value, the stored answers."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy.stats import binomtest

from core.listening import abx, abx_db, abx_store


def test_trial_plan_is_random_but_reproducible_from_the_seed():
    plans = {abx.plan_trials(20, seed) for seed in range(30)}
    assert abx.plan_trials(20, 7) == abx.plan_trials(20, 7)
    assert len(plans) == 30  # 30 seeds, 30 different orders
    assert all(set(p) <= {"A", "B"} and len(p) == 20 for p in plans)
    both = "".join(plans)
    assert 0.4 < both.count("A") / len(both) < 0.6


@pytest.mark.parametrize("n", [1, 4, 10, 16, 37])
def test_p_value_matches_scipys_one_sided_binomial_test(n):
    for k in range(n + 1):
        expected = binomtest(k, n, 0.5, alternative="greater").pvalue
        assert abx.binomial_p(k, n) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("correct", "trials", "sentence"),
    [
        (8, 10, "8 of 10: you can probably tell them apart, p = 0.0547"),
        (9, 10, "9 of 10: you can tell them apart, p = 0.0107"),
        (5, 10, "5 of 10: you could not reliably tell them apart (no better than guessing), p = 0.6230"),
        (4, 4, "4 of 4: you can probably tell them apart, p = 0.0625"),
    ],
)
def test_the_sentence_says_what_the_score_means(correct, trials, sentence):
    assert abx.score(correct, trials).sentence == sentence


def _take(store, token, first, answers):
    trial = first
    for answer in answers:
        trial = store.answer(token, trial.index, answer(trial))
    return trial


def test_answers_survive_a_restart(tmp_path):
    store = abx_store.AbxStore(tmp_path)
    token, first = store.start("c" * 64, "reconstruction", trials=4, seed=3)
    trial = _take(store, token, first, [lambda t: t.x_is, lambda t: "B" if t.x_is == "A" else "A"])
    assert trial.index == 2
    del store  # the server goes away; a new one opens the same folder
    again = abx_store.AbxStore(tmp_path)
    assert again.current(token).index == 2
    assert [r["correct"] for r in again.rows(token)] == [1, 0]
    assert _take(again, token, again.current(token), [lambda t: t.x_is] * 2) is None
    result = again.results(token)
    assert (result.correct, result.trials, result.planned) == (3, 4, 4)
    assert result.p_value == pytest.approx(binomtest(3, 4, 0.5, alternative="greater").pvalue)


def test_one_session_cannot_read_or_answer_another(tmp_path):
    store = abx_store.AbxStore(tmp_path)
    mine, first = store.start("a" * 64, "reconstruction", trials=3, seed=1)
    theirs, _ = store.start("b" * 64, "reconstruction", trials=3, seed=1)
    store.answer(mine, 0, first.x_is)
    assert store.rows(theirs) == []
    assert store.results(theirs).trials == 0
    assert len(mine) >= 40 and mine != theirs
    for guess in ("", "a" * 64, mine[:-1] + ("A" if mine[-1] != "A" else "B")):
        with pytest.raises(abx.AbxError):
            store.rows(guess)
    # the database keeps only hashes: a copy of it does not give away anyone's token
    assert mine.encode() not in (tmp_path / abx_db.DB_NAME).read_bytes()


def test_answers_are_checked_and_timed(tmp_path):
    clock = iter([100.0, 103.5, 110.0]).__next__  # start, then each recorded answer
    store = abx_store.AbxStore(tmp_path, clock=clock)
    token, _first = store.start("d" * 64, "reconstruction", trials=2, seed=0)
    with pytest.raises(abx.AbxError, match="A or B"):
        store.answer(token, 0, "C")
    with pytest.raises(abx.AbxError, match="not the current one"):
        store.answer(token, 1, "A")
    second = store.answer(token, 0, "a")
    store.answer(token, second.index, "B")
    with pytest.raises(abx.AbxError, match="finished"):
        store.answer(token, 2, "A")
    assert [r["seconds"] for r in store.rows(token)] == [3.5, 6.5]


def test_csv_export_has_one_row_per_trial_and_never_overwrites(tmp_path):
    store = abx_store.AbxStore(tmp_path / "data")
    samples = np.linspace(-1, 1, 100, dtype=np.float32)
    token, trial = store.start(abx_store.clip_checksum(samples), "reconstruction", trials=2, seed=5)
    _take(store, token, trial, [lambda t: "A"] * 2)
    other, trial = store.start("e" * 64, "k8", trials=1, seed=5)
    store.answer(other, 0, "B")
    mine = store.export_csv(tmp_path / "mine.csv", token)
    rows = list(csv.DictReader(mine.open()))
    assert [r["trial"] for r in rows] == ["0", "1"]
    assert rows[0]["clip_sha256"] == abx_store.clip_checksum(samples.copy())
    assert len(list(csv.DictReader(store.export_csv(tmp_path / "all.csv").open()))) == 3
    with pytest.raises(FileExistsError):
        store.export_csv(mine, token)


def test_operator_exports_every_session_from_the_command_line(tmp_path, capsys):
    from core.cli.main import main

    store = abx_store.AbxStore(tmp_path / "data")
    for seed in (1, 2):
        token, trial = store.start("f" * 64, "reconstruction", trials=2, seed=seed)
        _take(store, token, trial, [lambda t: "A"] * 2)
    out = tmp_path / "all.csv"
    argv = ["abx-export", "-o", str(out), "--data-dir", str(tmp_path / "data")]
    assert main(argv) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 4 and len({r["session"] for r in rows}) == 2
    assert main(argv) == 1 and "exists" in capsys.readouterr().err  # never overwrites
