"""Small statistics for the report: Wilson intervals, Spearman's rho with its p-value
(computed by SciPy), and a quadratic fit."""

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


@dataclass(frozen=True)
class SpearmanResult:
    rho: float
    pvalue: float
    n: int


def spearman(x: Sequence[float], y: Sequence[float]) -> SpearmanResult:
    """Spearman's rank correlation (Pearson on mid-ranks) with a two-sided p-value.

    The p-value uses the t approximation t = rho * sqrt((n - 2) / (1 - rho^2)) with n - 2
    degrees of freedom (SciPy's ``spearmanr``). Pairs with a nan are dropped. Needs n >= 3
    and both series not constant; otherwise rho and p are nan.
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.shape != ya.shape:
        raise ValueError("x and y must have the same length")
    keep = ~(np.isnan(xa) | np.isnan(ya))
    xa, ya = xa[keep], ya[keep]
    n = int(len(xa))
    if n < 3 or np.all(xa == xa[0]) or np.all(ya == ya[0]):
        return SpearmanResult(math.nan, math.nan, n)
    rx, ry = _midranks(xa), _midranks(ya)
    rx -= rx.mean()
    ry -= ry.mean()
    rho = max(-1.0, min(1.0, float(rx @ ry) / math.sqrt(float(rx @ rx) * float(ry @ ry))))
    if abs(rho) == 1.0:
        return SpearmanResult(rho, 0.0, n)
    # Imported here, and only scipy.special (Student's t tail): scipy.stats takes over a second to
    # import, and only the report's figure needs this, not the stages that use this module.
    from scipy.special import stdtr

    t = rho * math.sqrt((n - 2) / (1.0 - rho * rho))
    return SpearmanResult(rho, float(2.0 * stdtr(n - 2, -abs(t))), n)


def _midranks(a: np.ndarray) -> np.ndarray:
    """Ranks from 1, tied values sharing the mean of the ranks they span."""
    order = np.argsort(a, kind="mergesort")
    ordered = a[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # where each run of equal values begins
    ends = np.r_[starts[1:], len(a)]  # and one past where it ends
    ranks = np.empty(len(a))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)  # the mean of ranks starts+1 .. ends
    return ranks


def quadratic_fit(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Least-squares coefficients (a, b, c) of y = a x^2 + b x + c."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if len(xa) < 3:
        raise ValueError("a quadratic fit needs at least 3 points")
    return np.polyfit(xa, ya, 2)
