"""Small statistics for the report: Wilson intervals, Spearman's rho with its p-value,
and a quadratic fit.

No scipy: the p-value of Spearman's rho uses Student's t with n - 2 degrees of freedom,
whose tail is a regularized incomplete beta function, evaluated here by its continued
fraction (modified Lentz method).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# Two-sided 95%: the 0.975 quantile of the standard normal distribution.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion, as fractions in [0, 1].

    Returns (nan, nan) when there are no trials: a rate over nothing has no interval.
    """
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    if trials == 0:
        return (math.nan, math.nan)
    n = float(trials)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low, high = centre - half, centre + half
    # At k = 0 and k = n the exact bound is 0 or 1; keep rounding noise out of it.
    if successes == 0:
        low = 0.0
    if successes == trials:
        high = 1.0
    return (max(0.0, low), min(1.0, high))


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function, by the modified Lentz method."""
    tiny = 1e-300
    eps = 1e-15
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < tiny:
        d = tiny
    d = 1.0 / d
    result = d
    for m in range(1, 10_000):
        m2 = 2 * m
        # Even step of the fraction.
        num = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + num * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + num / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        result *= d * c
        # Odd step.
        num = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + num * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + num / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        result *= step
        if abs(step - 1.0) < eps:
            return result
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def betainc_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if a <= 0 or b <= 0:
        raise ValueError("a and b must be positive")
    if not 0.0 <= x <= 1.0:
        raise ValueError("x must lie in [0, 1]")
    if x == 0.0 or x == 1.0:
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The fraction converges fast on this side of the mean; use the symmetry
    # I_x(a, b) = 1 - I_{1-x}(b, a) on the other side.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_two_sided_pvalue(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if df <= 0:
        raise ValueError("df must be positive")
    if math.isinf(t):
        return 0.0
    if math.isnan(t):
        return math.nan
    return betainc_regularized(df / 2.0, 0.5, df / (df + t * t))


def rankdata(values: Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties sharing the mean of the ranks they span."""
    arr = np.asarray(values, dtype=float)
    order = np.argsort(arr, kind="mergesort")
    ranks = np.empty(len(arr), dtype=float)
    sorted_vals = arr[order]
    i = 0
    while i < len(arr):
        j = i
        while j + 1 < len(arr) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


@dataclass(frozen=True)
class SpearmanResult:
    rho: float
    pvalue: float
    n: int


def spearman(x: Sequence[float], y: Sequence[float]) -> SpearmanResult:
    """Spearman's rank correlation (Pearson on mid-ranks) with a two-sided p-value.

    The p-value uses the t approximation t = rho * sqrt((n - 2) / (1 - rho^2)) with n - 2
    degrees of freedom, the same one most statistics packages use. Needs n >= 3 and both
    series not constant; otherwise rho and p are nan.
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.shape != ya.shape:
        raise ValueError("x and y must have the same length")
    keep = ~(np.isnan(xa) | np.isnan(ya))
    xa, ya = xa[keep], ya[keep]
    n = int(len(xa))
    if n < 3:
        return SpearmanResult(math.nan, math.nan, n)
    rx = rankdata(xa) - (n + 1) / 2.0
    ry = rankdata(ya) - (n + 1) / 2.0
    denom = math.sqrt(float(np.sum(rx * rx)) * float(np.sum(ry * ry)))
    if denom == 0.0:
        return SpearmanResult(math.nan, math.nan, n)
    rho = float(np.sum(rx * ry)) / denom
    rho = max(-1.0, min(1.0, rho))
    df = n - 2
    if abs(rho) >= 1.0:
        return SpearmanResult(rho, 0.0, n)
    t = rho * math.sqrt(df / ((1.0 - rho) * (1.0 + rho)))
    return SpearmanResult(rho, t_two_sided_pvalue(t, df), n)


def quadratic_fit(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Least-squares coefficients (a, b, c) of y = a x^2 + b x + c."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if len(xa) < 3:
        raise ValueError("a quadratic fit needs at least 3 points")
    return np.polyfit(xa, ya, 2)
