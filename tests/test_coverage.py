"""Coverage of the score-powered corrected rate, by seeded simulation on the development pool.

A subset of `python -m orbench.statistics.coverage` (docs/statistics/coverage.md has the full tables): the
populations are built from the pool's parts with held-out scores (each part scored by the
detector fitted without it), and every case must hold the truth in at least 93% of runs.
The held-out scores are cached in .orbench-cache/ (git-ignored): the first time, they come from
the leave-one-out that tests/test_refusal_loo.py reads too, run once per test run.
"""

from __future__ import annotations

import numpy as np
import pytest

from orbench.statistics.coverage import BY_CASE_NAME as BY_NAME, compare, two_rounds
from orbench.statistics.design import SCORE, UNIFORM
from orbench.statistics.simulation import Case, design_draw, held_out_parts, populations, score_strata
from orbench.statistics.stratified import Z_95, strata_interval
from tests.refusal_pool_helpers import POOL

from tests.conftest import REPO_ROOT

RUNS = 2000  # per cell: the coverage of a 95% interval is then known to about ±0.5 points
MIN_COVERAGE = 0.93


@pytest.fixture(scope="module")
def parts(pool_loo):
    # Not cached yet: the scores of the leave-one-out run once per test run (tests/conftest.py).
    return held_out_parts(POOL, REPO_ROOT / ".orbench-cache" / "loo_scores", computed=lambda: pool_loo.run.result)


HARD = ["refuses 2%, weak detector", "refuses 98%, weak detector", "detector badly wrong",
        "score carries nothing", "refuses 2%"]


@pytest.mark.parametrize("size", [50, 300])
@pytest.mark.parametrize("name", HARD)
def test_coverage_at_least_93_percent_both_designs(parts, name, size):
    case = BY_NAME[name]
    cells = compare(parts[case.part], case, size, RUNS, seed=101)
    for column in ("new", "new, score design", "middle"):
        assert cells[column].coverage >= MIN_COVERAGE, (name, size, column, cells[column].text())


@pytest.mark.parametrize("name", ["detector badly wrong", "refuses 2%, weak detector"])
@pytest.mark.parametrize("design", [UNIFORM, SCORE])
def test_two_rounds_cover_with_a_sample_size_chosen_from_the_data(parts, name, design):
    case = BY_NAME[name]
    r = two_rounds(parts[case.part], case, design, target_pts=3.0, maximum=1000, runs=500, seed=102)
    assert r.cell.coverage >= MIN_COVERAGE, (name, design, r.cell.text())
    assert r.reached >= 0.6  # most runs end at the target


def test_new_interval_is_narrower_than_todays_on_every_source(parts):
    for name, part in parts.items():
        cells = compare(part, Case(name, name), 300, RUNS, seed=103)
        assert cells["new"].coverage >= MIN_COVERAGE, (name, cells["new"].text())
        assert cells["new"].halfwidth < cells["today"].halfwidth, (name, cells["new"].text(), cells["today"].text())


def test_a_score_that_carries_nothing_costs_almost_nothing(parts):
    # Against the judged sample alone (one stratum: the Wilson interval with the same finite-
    # population correction), stratifying on a shuffled score widens the interval by < 3%.
    case = BY_NAME["score carries nothing"]
    rng = np.random.default_rng(104)
    scores, refused = populations(parts[case.part], case, 500, rng)
    d = design_draw(scores, rng.random(scores.shape), 300, UNIFORM)
    _, low, high = strata_interval(score_strata(scores, refused, d))
    _, low1, high1 = strata_interval(score_strata(np.zeros_like(scores), refused, d))
    assert np.mean(high - low) < 1.03 * np.mean(high1 - low1)


def test_the_check_can_fail_a_normal_interval_on_the_same_strata(parts):
    # The plug-in normal interval on the same estimate: a stratum whose judged rows show no
    # refusal adds no width, so on a rarely refusing model it misses the truth far too often.
    case = BY_NAME["refuses 2%, weak detector"]
    rng = np.random.default_rng(105)
    scores, refused = populations(parts[case.part], case, RUNS, rng)
    truth = refused.mean(axis=1)
    strata = score_strata(scores, refused, design_draw(scores, rng.random(scores.shape), 50, UNIFORM)).merged()
    x, n, W = strata.effective()
    p = np.where(n > 0, x / np.where(n > 0, n, 1), 0.0)
    est = (W * p).sum(axis=1)
    half = Z_95 * np.sqrt((W * W * p * (1 - p) / np.where(n > 0, n, 1)).sum(axis=1))
    assert np.mean((est - half <= truth) & (truth <= est + half)) < MIN_COVERAGE
