"""MUSHRA's core (issue 28): the plan, the order per listener and screen, ratings, the scale's
words, BS.1534 post-screening, pooled means with t intervals, pooled ABX; checked against SciPy."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from core.listening import mushra, mushra_screening, pooled_stats, shared_test_results

CONDITIONS = ("original", "lp3.5", "lp7", "reconstruction", "opus6")


@pytest.mark.parametrize("df", [1, 2, 5, 9, 30, 200])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_t_quantile_matches_scipy(p, df):
    assert pooled_stats.t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-9)
    assert pooled_stats.t_quantile(1 - p, df) == pytest.approx(stats.t.ppf(1 - p, df), rel=1e-9, abs=1e-9)


def test_mean_ci_matches_scipy():
    values = [71, 64, 80, 77, 59, 73, 68]
    ci = pooled_stats.mean_ci(values)
    low, high = stats.t.interval(0.95, len(values) - 1, loc=sum(values) / 7, scale=stats.sem(values))
    assert (ci.low, ci.high) == (pytest.approx(low), pytest.approx(high))
    one = pooled_stats.mean_ci([50])
    assert one.mean == 50 and math.isnan(one.half_width)  # no spread from one rating: not available
    assert math.isnan(pooled_stats.mean_ci([]).mean)


@pytest.mark.parametrize(("correct", "n"), [(0, 0), (7, 10), (31, 40), (60, 100), (3, 10)])
def test_binomial_tail_matches_scipy(correct, n):
    expected = 1.0 if n == 0 else stats.binomtest(correct, n, 0.5, alternative="greater").pvalue
    assert pooled_stats.binomial_tail(correct, n) == pytest.approx(expected, rel=1e-12)


def test_the_plan_has_the_reference_and_both_anchors_and_refuses_bad_choices():
    plan = mushra.plan(["reconstruction", "opus6", "lp7"], [(0.0, 3.0)], known={"reconstruction", "opus6"})
    assert plan.conditions == ("original", "lp3.5", "lp7", "reconstruction", "opus6")
    assert mushra.Plan.from_dict(plan.to_dict()) == plan
    with pytest.raises(mushra.MushraError, match="at most 6"):
        mushra.plan([f"k{k}" for k in range(1, 8)], [(0, 1)])
    with pytest.raises(mushra.MushraError, match="Unknown condition ids"):
        mushra.plan(["opus7"], [(0, 1)], known={"opus6"})
    with pytest.raises(mushra.MushraError, match="once"):
        mushra.plan(["opus6", "opus6"], [(0, 1)])
    with pytest.raises(mushra.MushraError, match="region"):
        mushra.plan([], [(2.0, 1.0)])


def test_the_order_differs_per_listener_and_screen_and_is_stable():
    orders = {tuple(mushra.order(CONDITIONS, 7, who, s)) for who in ("a", "b", "c") for s in range(3)}
    assert len(orders) > 4  # 9 draws of 120 orders: nearly all different
    assert mushra.order(CONDITIONS, 7, "a", 0) == mushra.order(CONDITIONS, 7, "a", 0)
    assert sorted(mushra.order(CONDITIONS, 7, "a", 1)) == sorted(CONDITIONS)


@pytest.mark.parametrize("bad", [-1, 101, 50.5, "abc", None, math.nan, math.inf, True, "1e3"])
def test_a_rating_out_of_range_is_refused_in_words(bad):
    with pytest.raises(mushra.MushraError, match="whole number from 0 to 100"):
        mushra.check_rating(bad)


def test_ratings_in_range_are_taken():
    assert [mushra.check_rating(v) for v in (0, "100", 42.0)] == [0, 100, 42]


def test_the_scale_words():
    assert [mushra.scale_word(v) for v in (0, 19.9, 20, 48, 71, 96, 100)] == [
        "bad",
        "bad",
        "poor",
        "fair",
        "good",
        "excellent",
        "excellent",
    ]
    assert mushra.scale_word(math.nan) == ""


def _ratings(listener: str, per_item: list[dict]) -> list[dict]:
    return [
        {"listener": listener, "item": i, "condition": c, "rating": r}
        for i, got in enumerate(per_item)
        for c, r in got.items()
    ]


GOOD = {"original": 98, "lp3.5": 15, "lp7": 40, "reconstruction": 72, "opus6": 48}


def test_screening_excludes_a_listener_who_misses_the_reference_or_prefers_the_anchor():
    careless = dict(GOOD, original=60)  # below 90 on the only item: 100 % > 15 %
    swapped = dict(GOOD, original=92, **{"lp3.5": 95})  # the 3.5 kHz anchor above the reference
    ratings = _ratings("ann", [GOOD]) + _ratings("bob", [dict(GOOD, reconstruction=66)]) + _ratings("cy", [careless])
    ratings += _ratings("dee", [swapped])
    pooled = shared_test_results.pool_mushra(CONDITIONS, ratings)
    reasons = {s.listener: (s.excluded, s.reason) for s in pooled.screened}
    assert reasons == {
        "ann": (False, ""),
        "bob": (False, ""),
        "cy": (True, "reference"),
        "dee": (True, "anchor"),
    }
    assert (pooled.listeners, pooled.kept) == (4, 2)
    codec = next(r for r in pooled.conditions if r.condition == "reconstruction")
    assert codec.ci.n == 2 and codec.ci.mean == 69 and codec.word == "good"
    both = shared_test_results.pool_mushra(CONDITIONS, ratings, include_excluded=True)
    assert next(r for r in both.conditions if r.condition == "original").ci.n == 4  # the toggle includes them
    assert "Excluded" in pooled.rule and "90" in pooled.rule and "15%" in pooled.rule


def test_one_item_in_ten_below_90_is_within_the_rule_and_incomplete_screens_do_not_count():
    items = [GOOD] * 9 + [dict(GOOD, original=85)]  # 10 % of items: kept
    half = {"original": 30}  # an unfinished screen: not counted against anyone
    s = mushra_screening.screen("x", {i: g for i, g in enumerate([*items, half])}, CONDITIONS)
    assert (s.items, s.reference_low, s.excluded) == (10, 1, False)
    two = mushra_screening.screen("y", {i: g for i, g in enumerate([*items[:8], items[9], items[9]])}, CONDITIONS)
    assert (two.reference_low, two.excluded) == (2, True)  # 20 % > 15 %


def test_the_sentence_names_conditions_best_first():
    ratings = _ratings("ann", [GOOD]) + _ratings("bob", [dict(GOOD, reconstruction=70, opus6=52, original=94)])
    ratings += _ratings("cy", [dict(GOOD, original=50)])
    pooled = shared_test_results.pool_mushra(CONDITIONS, ratings)
    names = {"original": "the hidden reference", "reconstruction": "the codec", "opus6": "Opus 6 kbit/s"}
    text = shared_test_results.mushra_sentence(pooled, lambda c: names.get(c, c))
    assert text.startswith(
        "3 listeners, 2 kept: rated the hidden reference 'excellent' (96 (71–100))"
    )  # 98, 94: past 100
    assert "the codec 'good' (71 ± " in text and text.index("the codec") < text.index("Opus 6 kbit/s")
    assert "too few listeners to conclude" in text  # 2 kept of 3


def test_two_listeners_say_too_few_and_no_interval_reaches_past_the_scale():
    far = dict(GOOD, reconstruction=5, opus6=95)  # two listeners who disagree: intervals wider than the scale
    pooled = shared_test_results.pool_mushra(CONDITIONS, _ratings("ann", [GOOD]) + _ratings("bob", [far]))
    assert pooled.too_few_to_conclude and pooled.to_dict()["too_few_to_conclude"]
    codec = next(r for r in pooled.conditions if r.condition == "reconstruction")
    assert codec.ci.low < 0 and codec.ci.high > 100  # the t interval with one degree of freedom
    shown = shared_test_results.plus_minus(codec.ci)
    assert shown == f"{codec.ci.mean:.0f} (0–100)" and "±" not in shown
    text = shared_test_results.mushra_sentence(pooled, str)
    assert "too few listeners to conclude" in text
    three = _ratings("ann", [GOOD]) + _ratings("bob", [GOOD]) + _ratings("cy", [GOOD])
    assert not shared_test_results.pool_mushra(CONDITIONS, three).too_few_to_conclude


def test_a_tiny_p_is_said_as_a_bound():
    assert pooled_stats.p_text(2.0**-40) == "p < 0.0001"
    assert pooled_stats.p_text(0.03125) == "p = 0.0312"


def test_pooled_abx_is_total_correct_of_total_trials_with_exact_p():
    answers = [{"listener": "a", "correct": c} for c in [1] * 9 + [0]]
    answers += [{"listener": "b", "correct": c} for c in [1] * 5 + [0] * 5]
    pooled = shared_test_results.pool_abx(answers)
    assert (pooled.correct, pooled.trials) == (14, 20)
    assert pooled.p_value == pytest.approx(stats.binomtest(14, 20, 0.5, alternative="greater").pvalue)
    assert [(r.listener, r.correct, r.trials) for r in pooled.listeners] == [("a", 9, 10), ("b", 5, 10)]
    assert shared_test_results.abx_sentence(pooled).startswith("2 listeners, 14 of 20 correct: ")
