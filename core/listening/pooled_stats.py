"""Statistics for results pooled over listeners: a mean with its Student-t confidence interval,
and the exact binomial tail for pooled ABX answers. Pure Python (no SciPy at run time; the tests
check both against ``scipy.stats``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

CONFIDENCE = 0.95  # the interval's coverage, as the issue asks


@dataclass(frozen=True)
class MeanCi:
    n: int  # ratings pooled
    mean: float  # NaN when n == 0
    half_width: float  # the interval is mean ± half_width; NaN when n < 2 (no spread to judge by)
    sd: float  # sample standard deviation; NaN when n < 2

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def to_dict(self) -> dict:
        return asdict(self) | {"low": self.low, "high": self.high}


def mean_ci(values, confidence: float = CONFIDENCE) -> MeanCi:
    """The mean of ``values`` and its two-sided ``confidence`` interval by the t distribution with
    n - 1 degrees of freedom."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return MeanCi(0, math.nan, math.nan, math.nan)
    mean = math.fsum(xs) / n
    if n < 2:
        return MeanCi(1, mean, math.nan, math.nan)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    return MeanCi(n, mean, t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n), sd)


def binomial_tail(correct: int, n: int) -> float:
    """One-sided P(K >= correct) for K ~ Binomial(n, 1/2), exact (1.0 for no trials)."""
    if not 0 <= correct <= n:
        raise ValueError(f"correct must be in 0..{n}, got {correct}")
    if n == 0:
        return 1.0
    return math.fsum(math.comb(n, k) for k in range(correct, n + 1)) / 2**n


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on :func:`t_cdf`,
    to 1e-12)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0 (got p={p}, df={df})")
    low, high = -1.0, 1.0
    while t_cdf(low, df) > p:
        low *= 2
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return (low + high) / 2


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction, Lentz's method)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast on this side only
        return 1.0 - _betainc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * f / a


def p_text(p: float) -> str:
    """ "p = 0.0312"; below what four decimals show, "p < 0.0001" (never "p = 0.0000")."""
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.4f}"
