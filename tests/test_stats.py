"""Statistics for the report, checked against closed forms, published values and quadrature."""

import math

import numpy as np
import pytest

import pandas as pd

from orbench.report import load_paper_results, paper_points
from orbench.statistics.stats import quadratic_fit, spearman, wilson_interval

Z = 1.959963984540054


def wilson_by_hand(k, n, z=Z):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("k,n", [(4, 8), (1, 3), (37, 120), (500, 1319)])
def test_wilson_matches_closed_form(k, n):
    lo, hi = wilson_interval(k, n)
    elo, ehi = wilson_by_hand(k, n)
    assert lo == pytest.approx(elo, abs=1e-12)
    assert hi == pytest.approx(ehi, abs=1e-12)
    assert lo < k / n < hi


def test_wilson_known_value():
    # A textbook case: 0 of 10 gives an upper bound of z^2 / (n + z^2).
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0
    assert hi == pytest.approx(Z * Z / (10 + Z * Z), abs=1e-12)
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0
    assert lo == pytest.approx(10 / (10 + Z * Z), abs=1e-12)


def test_wilson_no_trials_and_bad_input():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(5, 4)


def t_two_sided_by_quadrature(t, df, points=200_001):
    """P(|T| >= |t|) for Student's t, by Simpson's rule over u = |t| / s in (0, 1].

    An oracle independent of SciPy's incomplete beta: the density is written out, and the
    substitution turns the infinite tail into a smooth integrand on a finite interval.
    """
    a = abs(t)
    u = np.linspace(0.0, 1.0, points)[1:]
    s = a / u
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    f = np.exp(log_c - (df + 1) / 2 * np.log1p(s * s / df)) * a / (u * u)
    # As u -> 0 the integrand behaves like c * df^((df + 1) / 2) * |t|^-df * u^(df - 1).
    f0 = math.exp(log_c) * df ** ((df + 1) / 2) * a ** -df if df == 1 else 0.0
    f = np.concatenate([[f0], f])
    h = 1.0 / (points - 1)
    tail = h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())
    return 2 * tail


def midrank_pearson(x, y):
    rx = pd.Series(x, dtype=float).rank(method="average").to_numpy()
    ry = pd.Series(y, dtype=float).rank(method="average").to_numpy()
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float(rx @ ry / math.sqrt((rx @ rx) * (ry @ ry)))


def test_quadrature_oracle_matches_closed_forms():
    # df = 1 is the Cauchy distribution, df = 2 has an algebraic tail: the oracle itself is right.
    for t in (0.4, 2.5, 12.0):
        assert t_two_sided_by_quadrature(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(t), rel=1e-9)
        assert t_two_sided_by_quadrature(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-9)


def paper_pairs():
    pts = paper_points(load_paper_results())
    return list(pts["hard_pct"]), list(pts["toxic_pct"])


def seeded_pairs(seed, n, ties):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.6 * x + rng.normal(size=n)
    return (np.round(x), np.round(y)) if ties else (x, y)


@pytest.mark.parametrize("case", ["paper", "wikipedia", "small", "ties", "negative"])
def test_spearman_against_midranks_and_t_tail(case):
    x, y = {
        "paper": paper_pairs,
        "wikipedia": lambda: ([106, 100, 86, 101, 99, 103, 97, 113, 112, 110], [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]),
        "small": lambda: seeded_pairs(1, 6, ties=False),
        "ties": lambda: seeded_pairs(2, 40, ties=True),
        "negative": lambda: (seeded_pairs(3, 15, ties=False)[0], -seeded_pairs(3, 15, ties=False)[1]),
    }[case]()
    res = spearman(x, y)
    rho = midrank_pearson(x, y)
    assert res.n == len(x)
    assert res.rho == pytest.approx(rho, abs=1e-12)
    t = rho * math.sqrt((res.n - 2) / (1 - rho * rho))
    assert res.pvalue == pytest.approx(t_two_sided_by_quadrature(t, res.n - 2), rel=1e-7)


def test_spearman_published_values():
    # The paper's 32 models (PROTOCOL.md): rho 0.893, far from chance.
    res = spearman(*paper_pairs())
    assert round(res.rho, 3) == 0.893 and res.n == 32
    assert 1e-12 < res.pvalue < 1e-10
    # Wikipedia's worked example (IQ against hours of TV): rho = -29/165, p = 0.627188.
    res = spearman([106, 100, 86, 101, 99, 103, 97, 113, 112, 110], [7, 27, 2, 50, 28, 29, 20, 12, 6, 17])
    assert res.rho == pytest.approx(-29 / 165, abs=1e-12)
    assert res.pvalue == pytest.approx(0.627188, abs=5e-7)


def test_spearman_hand_case():
    # d = ranks differ by (-1, 1, -1, 1, 0): rho = 1 - 6 * 4 / (5 * 24) = 0.8.
    res = spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert res.rho == pytest.approx(0.8, abs=1e-12)
    t = 0.8 * math.sqrt(3 / (1 - 0.64))
    u = t / math.sqrt(3)
    expected_p = 1 - 2 / math.pi * (math.atan(u) + u / (1 + u * u))
    assert res.pvalue == pytest.approx(expected_p, abs=1e-12)
    assert res.pvalue == pytest.approx(0.1041, abs=5e-4)  # the usual quoted value
    assert res.n == 5


def test_spearman_edges():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]).rho == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]).pvalue == 0.0
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]).rho == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 2], [3, 4]).rho)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]).rho)
    # Ties use mid-ranks (Pearson on ranks): a hand check.
    res = spearman([1, 2, 2, 3], [1, 3, 2, 4])
    rx = np.array([1, 2.5, 2.5, 4]) - 2.5
    ry = np.array([1, 3, 2, 4]) - 2.5
    assert res.rho == pytest.approx((rx @ ry) / math.sqrt((rx @ rx) * (ry @ ry)))


def test_quadratic_fit_recovers_coefficients():
    x = np.linspace(0, 100, 9)
    y = -0.004 * x ** 2 + 0.6 * x + 70
    assert quadratic_fit(x, y) == pytest.approx([-0.004, 0.6, 70], abs=1e-9)


def test_spearman_is_scipys_on_seeded_data_with_ties():
    """The midranks and the t tail are our own (no scipy.stats import at report time): on 300 seeded
    samples, ties and perfect correlations among them, they agree with scipy.stats.spearmanr."""
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(7)
    for i in range(300):
        n = int(rng.integers(3, 60))
        x = np.round(rng.normal(size=n) * rng.integers(1, 4))
        y = x * 2.0 if i % 50 == 0 else np.round(0.5 * x + rng.normal(size=n))
        expected = scipy_stats.spearmanr(x, y)
        got = spearman(x, y)
        if math.isnan(expected.statistic):  # a constant series: both say nan
            assert math.isnan(got.rho) and math.isnan(got.pvalue)
            continue
        assert got.rho == pytest.approx(expected.statistic, abs=1e-12)
        assert got.pvalue == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-15)
