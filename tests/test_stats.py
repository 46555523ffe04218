"""Statistics for the report, checked against closed forms and known table values."""

import math

import numpy as np
import pytest

from orbench.stats import (
    betainc_regularized,
    quadratic_fit,
    rankdata,
    spearman,
    t_two_sided_pvalue,
    wilson_interval,
)

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


@pytest.mark.parametrize("x", [0.05, 0.3, 0.5, 0.77, 0.999])
def test_incomplete_beta_closed_forms(x):
    assert betainc_regularized(1, 1, x) == pytest.approx(x, abs=1e-13)
    assert betainc_regularized(3.5, 1, x) == pytest.approx(x ** 3.5, abs=1e-13)
    assert betainc_regularized(1, 4.0, x) == pytest.approx(1 - (1 - x) ** 4, abs=1e-13)
    assert betainc_regularized(7.0, 7.0, 0.5) == pytest.approx(0.5, abs=1e-13)
    # Symmetry I_x(a, b) = 1 - I_{1-x}(b, a).
    assert betainc_regularized(2.5, 0.5, x) == pytest.approx(
        1 - betainc_regularized(0.5, 2.5, 1 - x), abs=1e-12)


@pytest.mark.parametrize("t", [0.0, 0.4, 1.0, 2.5, 12.0, -3.0])
def test_t_pvalue_closed_forms(t):
    a = abs(t)
    # df = 1 is the Cauchy distribution, df = 2 has an algebraic tail.
    assert t_two_sided_pvalue(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(a), abs=1e-12)
    assert t_two_sided_pvalue(t, 2) == pytest.approx(1 - a / math.sqrt(2 + a * a), abs=1e-12)
    u = a / math.sqrt(3)
    df3 = 1 - 2 / math.pi * (math.atan(u) + u / (1 + u * u))
    assert t_two_sided_pvalue(t, 3) == pytest.approx(df3, abs=1e-12)


def test_t_pvalue_known_quantiles():
    # Critical values from t tables: two-sided 5% at 10 df, 1% at 5 df, 5% at 30 df.
    assert t_two_sided_pvalue(2.228138851986274, 10) == pytest.approx(0.05, abs=1e-10)
    assert t_two_sided_pvalue(4.032142983557536, 5) == pytest.approx(0.01, abs=1e-10)
    assert t_two_sided_pvalue(2.042272456301238, 30) == pytest.approx(0.05, abs=1e-10)


def test_rankdata_ties_get_mean_rank():
    assert list(rankdata([10, 20, 20, 5, 20])) == [2.0, 4.0, 4.0, 1.0, 4.0]


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
