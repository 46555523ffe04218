"""The score-powered estimate (orbench.statistics.stratified), the designs (orbench.statistics.design) and the
planning of judge calls (orbench.statistics.planning), checked by hand and against known values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orbench.statistics.design import SCORE, UNIFORM, doubt, draw_design, score_probabilities, unit
from orbench.statistics.estimate import estimate
from orbench.statistics.estimators import wilson_bounds
from orbench.statistics.planning import calls_for, extension_size, judged_by_stratum, pilot_size, predicted_halfwidth
from orbench.statistics.stratified import (
    STRATA_EDGES, Strata, merge_map, strata_from_rows, strata_interval, stratified_wilson, stratum_of,
    t_quantile_975,
)

Z = 1.959963984540054


def test_one_stratum_is_exactly_the_wilson_interval():
    x = np.array([[0.0], [1.0], [7.0], [50.0], [99.0], [100.0]])
    n = np.full_like(x, 100.0)
    est, low, high = stratified_wilson(x, n, np.ones_like(x), z=Z)
    wl, wh = wilson_bounds(x[:, 0], n[:, 0])
    assert est == pytest.approx(x[:, 0] / 100)
    assert low == pytest.approx(wl, abs=1e-9) and high == pytest.approx(wh, abs=1e-9)


def test_two_strata_mirror_and_keep_a_width_where_a_stratum_shows_no_refusal():
    W = np.array([[0.7, 0.3]])
    n = np.array([[100.0, 20.0]])
    x = np.array([[0.0, 3.0]])
    est, low, high = stratified_wilson(x, n, W, z=Z)
    e2, l2, h2 = stratified_wilson(n - x, n, W, z=Z)
    assert est[0] == pytest.approx(0.3 * 3 / 20)
    assert (l2[0], h2[0]) == pytest.approx((1 - high[0], 1 - low[0]), abs=1e-9)  # refusals <-> answers
    # The empty stratum alone would allow 0.7 * Wilson upper(0 / 100) = 2.6 points more.
    assert high[0] - est[0] > 0.01
    # The normal interval with plug-in rates sees only the second stratum's variance.
    normal = Z * math.sqrt(0.3 ** 2 * 0.15 * 0.85 / 20)
    assert high[0] - est[0] > normal


def test_a_stratum_judged_in_full_is_known_exactly():
    scores = np.array([0.01] * 50 + [0.6] * 50)
    refused = np.array([0] * 50 + [1] * 30 + [0] * 20, dtype=float)
    judged = np.ones(100, dtype=bool)
    est, low, high = strata_interval(strata_from_rows(stratum_of(scores), judged, refused, np.ones(100)))
    assert (est[0], low[0], high[0]) == pytest.approx((0.3, 0.3, 0.3), abs=1e-5)  # 0.001 points


def test_strata_by_score_and_merging_by_judged_counts_only():
    assert list(stratum_of([0.0, 0.029, 0.03, 0.5, 0.97, 0.999, 1.0])) == [0, 0, 1, 5, 9, 9, 9]
    assert len(STRATA_EDGES) == 11
    judged = np.array([[3, 4, 12, 0, 20, 1, 0, 30, 2, 5]], dtype=float)
    # 3+4+12 = 19 >= 10: group 0; 0+20: group 1; 1+0+30: group 2; 2+5 < 10 joins group 2.
    assert merge_map(judged, 10).tolist() == [[0, 0, 0, 1, 1, 2, 2, 2, 2, 2]]


def test_equal_weights_and_uniform_probabilities_agree():
    rng = np.random.default_rng(3)
    scores = rng.random(500)
    refused = (rng.random(500) < scores).astype(float)
    judged = np.zeros(500, dtype=bool)
    judged[rng.choice(500, 120, replace=False)] = True
    a = strata_interval(strata_from_rows(stratum_of(scores), judged, refused, np.full(500, np.nan)))
    b = strata_interval(strata_from_rows(stratum_of(scores), judged, refused, np.full(500, 120 / 500)))
    assert np.allclose(a, b)


def test_weights_one_over_pi_undo_the_design():
    # Stratum 0 (score 0.01): 800 rows, 10% refusals, 40 judged at pi = 0.05; stratum 5 (score
    # 0.55): 200 rows, 60% refusals, 100 judged at pi = 0.5. Unweighted, the judged rows hold
    # (4 + 60) / 140 = 45.7% refusals; weighted, 0.8 * 10% + 0.2 * 60% = 20%.
    scores = np.array([0.01] * 800 + [0.55] * 200)
    judged = np.zeros(1000, dtype=bool)
    judged[:40] = True
    judged[800:900] = True
    refused = np.zeros(1000)
    refused[:4] = 1
    refused[800:860] = 1
    pi = np.where(scores < 0.5, 0.05, 0.5)
    est, low, high = strata_interval(strata_from_rows(stratum_of(scores), judged, refused, pi))
    assert est[0] == pytest.approx(0.2)
    assert low[0] < 0.2 < high[0] < 0.4


def test_t_quantile_matches_tables():
    assert t_quantile_975(np.array([3, 5, 10, 30, 1e9])) == pytest.approx([3.182, 2.571, 2.228, 2.042, Z], abs=5e-3)


def test_score_probabilities_sum_to_the_size_and_follow_doubt():
    scores = np.array([0.01] * 300 + [0.55] * 100 + [0.99] * 100)
    pi = score_probabilities(scores, 60)[0]
    assert pi.sum() == pytest.approx(60)
    # By hand: doubt = 2 sqrt(m (1 - m)) at the stratum's middle m (0.015, 0.575, 0.985); floor 0.5.
    w = {0.01: 0.5 + 2 * math.sqrt(0.015 * 0.985), 0.55: 0.5 + 2 * math.sqrt(0.575 * 0.425),
         0.99: 0.5 + 2 * math.sqrt(0.985 * 0.015)}
    assert pi[300] / pi[0] == pytest.approx(w[0.55] / w[0.01])
    assert pi[400] == pytest.approx(pi[0])
    assert doubt([0.5])[0] == pytest.approx(2 * math.sqrt(0.575 * 0.425))
    # A size the largest weights cannot take without certainty: those rows get pi = 1.
    big = score_probabilities(scores, 450)[0]
    assert big.sum() == pytest.approx(450) and big.max() == 1.0 and np.all(big <= 1.0)


def test_designs_are_deterministic_and_grow_into_supersets():
    ids = [f"row {i}" for i in range(2000)]
    scores = [((i * 37) % 100) / 100 for i in range(2000)]
    small = draw_design(ids, scores, 100, 5, SCORE)
    again = draw_design(ids, scores, 100, 5, SCORE)
    big = draw_design(ids, scores, 300, 5, SCORE)
    assert small.chosen == again.chosen and set(small.chosen) < set(big.chosen)
    assert 60 < len(small.chosen) < 140 and small.design.expected_rows == pytest.approx(100)
    # Every chosen row passed its own bar: u < pi.
    pis = dict(zip(big.chosen, big.pi))
    assert all(unit(5, ids[i]) < pis[i] for i in big.chosen)
    uni = draw_design(ids, None, 100, 5, UNIFORM)
    assert len(uni.chosen) == 100 and set(uni.pi) == {0.05}
    assert set(uni.chosen) < set(draw_design(ids, None, 150, 5, UNIFORM).chosen)


def test_score_design_reaches_rows_in_proportion_to_their_probability():
    # Over 300 seeds, a row's share of samples is close to its pi.
    ids = [f"k{i}" for i in range(200)]
    scores = [0.01] * 100 + [0.5] * 100
    hits = np.zeros(200)
    for seed in range(300):
        for i in draw_design(ids, scores, 40, seed, SCORE).chosen:
            hits[i] += 1
    pi = score_probabilities(np.array(scores), 40)[0]
    assert hits[:100].mean() / 300 == pytest.approx(pi[0], rel=0.1)
    assert hits[100:].mean() / 300 == pytest.approx(pi[150], rel=0.1)


def test_planning_grows_the_strata_as_the_design_would():
    rows = np.array([[800.0] + [0] * 4 + [200.0] + [0] * 4])
    assert judged_by_stratum(rows, np.array([100.0]), UNIFORM)[0].tolist() == pytest.approx([80] + [0] * 4 + [20] + [0] * 4)
    sizes = judged_by_stratum(rows, np.array([100.0]), SCORE)[0]
    assert sizes.sum() == pytest.approx(100) and sizes[5] / 200 > sizes[0] / 800


def test_calls_for_a_target_are_enough_and_not_many_more():
    rng = np.random.default_rng(8)
    runs, big_n = 200, 2000
    scores = rng.random((runs, big_n))
    refused = (rng.random((runs, big_n)) < scores).astype(float)
    judged = np.zeros((runs, big_n), dtype=bool)
    judged[:, :150] = True  # the rows are in random order already
    strata = strata_from_rows(stratum_of(scores), judged, refused, np.full((runs, big_n), np.nan))
    need = calls_for(strata, 0.03)
    assert np.all((need > 150) & (need < big_n))
    # At the planned size, the sample's own half-width is about 3 points.
    size = int(np.median(need))
    judged[:, :size] = True
    _, low, high = strata_interval(strata_from_rows(stratum_of(scores), judged, refused, np.full((runs, big_n), np.nan)))
    assert 0.027 < np.mean(high - low) / 2 < 0.033
    assert predicted_halfwidth(strata, np.full(runs, float(big_n))) == pytest.approx(0.0, abs=1e-6)


def test_rounds_pilot_and_extension_sizes():
    assert pilot_size(1000) == 100 and pilot_size(60) == 60
    assert extension_size(240, 100, 1000) == 300  # the pilot's need, with a 25% margin
    assert extension_size(5000, 100, 1000) == 1000 and extension_size(float("nan"), 100, 1000) == 1000
    assert extension_size(80, 100, 1000) == 125  # the pilot missed: grow it anyway


def test_estimate_picks_the_score_estimator_only_with_scores_everywhere():
    pop_k = np.array([True] * 30 + [False] * 70)
    judged_k, judged_y = pop_k[::2], np.array([True] * 20 + [False] * 30)
    with_scores = estimate(np.where(pop_k, 0.9, 0.1), pop_k, np.where(judged_k, 0.9, 0.1), judged_k, judged_y,
                           np.full(50, 0.5))
    assert with_scores.estimator == "score" and set(with_scores.calls) == {1, 2, 3}
    missing = np.where(pop_k, 0.9, np.nan)
    without = estimate(missing, pop_k, np.where(judged_k, 0.9, 0.1), judged_k, judged_y, np.full(50, 0.5))
    assert without.estimator == "keyword"
    empty = estimate([], [], [], [], [], [])
    assert math.isnan(empty.rate)


def test_strata_record_shape():
    s = strata_from_rows(np.array([[0, 5, 5]]), np.array([[True, True, False]]), np.array([[1, 0, 1]]),
                         np.array([[0.5, 0.25, 0.1]]))
    assert isinstance(s, Strata)
    assert s.rows[0, [0, 5]].tolist() == [1, 2] and s.judged[0, [0, 5]].tolist() == [1, 1]
    assert s.weight[0, [0, 5]].tolist() == [2, 4] and s.refused[0, [0, 5]].tolist() == [2, 0]
    assert s.weight_sq[0, [0, 5]].tolist() == [4, 16]
