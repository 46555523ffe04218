"""The corrected rate: checked against ppi_py's numbers, and its interval by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orbench.statistics.agreement import cohen_kappa, kappa_from_counts, pairwise
from orbench.statistics.estimators import correct, corrected_interval, ppi_normal_interval, simulate_counts
from tests.ppi_reference import CASES, arrays, ppi_reference

Z = 1.959963984540054

# From `python tests/ppi_reference.py` (ppi-python 0.2.x, ppi_mean_ci with lam=1, alpha=0.05).
REFERENCE = {
    "mixed": (0.4, 0.3099695711902659, 0.49003042880973413),
    "misses_half": (0.7, 0.6286594648018307, 0.7713405351981693),
    "no_disagreement": (0.3032600454890068, 0.27845336522266273, 0.3280667257553509),
    "mostly_refused": (0.956030534351145, 0.8755661239311539, 1.0364949447711362),
}


def counts(case):
    big_n, k, s11, s10, s01, s00 = case
    return dict(keyword_refused=k, population=big_n, missed=s10, false_refusals=s01,
                judged=s11 + s10 + s01 + s00)


@pytest.mark.parametrize("name", sorted(CASES))
def test_classic_ppi_matches_ppi_py_numbers(name):
    got = ppi_normal_interval(*arrays(CASES[name]))
    assert got == pytest.approx(REFERENCE[name], abs=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_classic_ppi_matches_ppi_py_live(name):
    pytest.importorskip("ppi_py")
    assert ppi_normal_interval(*arrays(CASES[name])) == pytest.approx(ppi_reference(CASES[name]), abs=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_corrected_estimate_is_the_ppi_estimate(name):
    est, low, high = (float(v) for v in corrected_interval(**counts(CASES[name])))
    assert est == pytest.approx(min(1.0, REFERENCE[name][0]), abs=1e-12)
    assert low <= est <= high


def test_corrected_interval_is_close_to_ppi_when_the_sample_disagrees_often():
    # 76 disagreements in 200: the normal approximation is fine there, and ours should
    # not be much wider than it.
    _, low, high = (float(v) for v in corrected_interval(**counts(CASES["misses_half"])))
    _, plow, phigh = REFERENCE["misses_half"]
    assert 1.0 <= (high - low) / (phigh - plow) < 1.15
    assert low == pytest.approx(plow, abs=0.01) and high == pytest.approx(phigh, abs=0.01)


def test_no_disagreement_keeps_an_interval_worked_by_hand():
    # 200 judged rows, no disagreement; keyword 400 of 1319. The difference's bounds are
    # the Wilson bounds of 0/200 (the other cell is 0, so the correlation term is 0), and
    # each side adds the keyword rate's Wilson half-width in quadrature.
    n, big_n, k = 200, 1319, 400
    wilson_up0 = Z * Z / (n + Z * Z)  # Wilson upper bound of 0 / n
    p = k / big_n
    centre = (p + Z * Z / (2 * big_n)) / (1 + Z * Z / big_n)
    half = Z / (1 + Z * Z / big_n) * math.sqrt(p * (1 - p) / big_n + Z * Z / (4 * big_n ** 2))
    low_k, high_k = centre - half, centre + half
    want_low = p - math.hypot(p - low_k, wilson_up0)
    want_high = p + math.hypot(high_k - p, wilson_up0)
    c = correct(keyword_refused=k, population=big_n, judge_refused=60, missed=0,
                false_refusals=0, judged=n)
    assert c.rate == pytest.approx(p)
    assert (c.ci_low, c.ci_high) == pytest.approx((want_low, want_high), abs=1e-12)
    # The classic interval only holds the keyword rate's own uncertainty here.
    _, plow, phigh = ppi_normal_interval(*arrays((big_n, k, 60, 0, 0, 140)))
    assert c.ci_high - c.ci_low > (phigh - plow) + 0.01


def test_correction_record_and_undefined_cases():
    c = correct(keyword_refused=360, population=1000, judge_refused=142, missed=72,
                false_refusals=4, judged=200)
    assert c.keyword_rate == pytest.approx(0.36)
    assert c.judge_rate == pytest.approx(0.71)
    assert c.agreement == pytest.approx(1 - 76 / 200)
    assert c.rate == pytest.approx(0.36 + 68 / 200)
    none = correct(keyword_refused=5, population=10, judge_refused=0, missed=0,
                   false_refusals=0, judged=0)
    assert math.isnan(none.rate) and math.isnan(none.ci_low) and math.isnan(none.judge_rate)


# ------------------------------------------------------------------ coverage, simulated


def simulate(p, sensitivity, false_alarm, n, big_n, runs, seed):
    return simulate_counts(p, sensitivity, false_alarm, n, big_n, runs, seed)


SCENARIOS = {  # p, sensitivity, false-alarm rate
    "misses_half_the_refusals": (0.70, 0.50, 0.05),
    "nearly_perfect": (0.30, 0.99, 0.005),
    # Errors all on one side: a sample that shows none leaves the keyword rate biased.
    "nearly_perfect_one_sided": (0.30, 0.98, 0.0),
}


def judge_only_width(p, n):
    """Width of the Wilson interval of the judge's rate over the sample alone."""
    centre_scale = 1 + Z * Z / n
    return 2 * Z / centre_scale * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))


@pytest.mark.parametrize("big_n", [80000, 1319])
@pytest.mark.parametrize("n", [50, 200, 1000])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_coverage_at_least_93_percent(scenario, n, big_n):
    p, sens, fa = SCENARIOS[scenario]
    runs = 2000
    pop, s11, s10, s01 = simulate(p, sens, fa, n, big_n, runs, seed=n * 7 + big_n)
    keyword = pop[:, 0] + pop[:, 2]
    est, low, high = corrected_interval(keyword, big_n, s10, s01, n)
    covered = (low <= p) & (p <= high)
    assert covered.mean() >= 0.93, f"{scenario}, n={n}, N={big_n}: coverage {covered.mean():.3f}"
    # Not absurdly wide: at most a little wider than the normal interval with the true
    # variances; where that one is too narrow to hold (rare disagreements, small n), still
    # well under the width of judging the sample alone and ignoring the keyword rules.
    a, b = p * (1 - sens), (1 - p) * fa
    k = p * sens + b
    normal = 2 * Z * math.sqrt(k * (1 - k) / big_n + ((a + b) - (a - b) ** 2) / n)
    width = float(np.mean(high - low))
    assert width < max(1.15 * normal, 0.65 * judge_only_width(p, n))
    assert abs(np.mean(est) - p) < 0.01  # no bias to speak of


def test_the_simulation_catches_an_interval_that_collapses():
    # The classic normal interval at n = 50 with a nearly perfect detector: most samples
    # show no disagreement and its interval is then the keyword rate's alone. The same
    # check as above fails it, so the check can fail.
    p, sens, fa = SCENARIOS["nearly_perfect_one_sided"]
    big_n, n = 80000, 50
    pop, s11, s10, s01 = simulate(p, sens, fa, n, big_n, runs=2000, seed=3)
    kr = (pop[:, 0] + pop[:, 2]) / big_n
    a, b = s10 / n, s01 / n
    est = kr + a - b
    se = np.sqrt(kr * (1 - kr) / big_n + ((a + b) - (a - b) ** 2) / n)
    covered = (est - Z * se <= p) & (p <= est + Z * se)
    assert covered.mean() < 0.93


# ------------------------------------------------------------------ agreement


def test_kappa_worked_by_hand():
    # 10 rows: both yes 4, first only 1, second only 2, both no 3.
    # p_o = 7/10; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7-0.5)/(1-0.5) = 0.4.
    first = [1] * 4 + [1] + [0] * 2 + [0] * 3
    second = [1] * 4 + [0] + [1] * 2 + [0] * 3
    n, observed, kappa = cohen_kappa(first, second)
    assert (n, observed) == (10, pytest.approx(0.7))
    assert kappa == pytest.approx(0.4)
    assert kappa_from_counts(4, 1, 2, 3) == pytest.approx(0.4)


def test_kappa_skips_unrated_rows_and_is_undefined_for_one_label():
    n, observed, kappa = cohen_kappa([1, None, 0, 1], [1, 1, None, 1])
    assert n == 2 and observed == 1.0 and math.isnan(kappa)
    assert math.isnan(cohen_kappa([None], [1])[2])
    pairs = pairwise({"a": [1, 0, 1, None], "b": [1, 0, 0, 1], "c": [0, 1, 0, 0]})
    assert [(p.first, p.second, p.rows) for p in pairs] == [("a", "b", 3), ("a", "c", 3), ("b", "c", 4)]
    assert pairs[0].agreement_pct == pytest.approx(200 / 3)
    assert pairs[1].kappa == pytest.approx(-0.8)  # 0 of 3 agree: p_e = (2*1 + 1*2)/9
    assert pairs[0].as_dict()["kappa"] == pytest.approx(0.4)
