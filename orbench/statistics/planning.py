"""How many judge calls a target half-width needs, from the judged sample's own rates.

For the score-powered estimate (orbench.statistics.stratified) the sample's merged strata keep their
judged refusal rates and their effective-size ratio, and their judged rows grow as the
design would grow them (uniform: in proportion to their rows; score: as the inclusion
probabilities rise with the size asked for). The predicted half-width at n judge calls is
half the width of the stratified Wilson interval those counts would give; the calls needed
for a target are the smallest n (at most N, where the rate is known exactly) that reach it.

For today's estimator (stage-4 files without a score) the disagreement rates are kept and
the sample grows; its keyword-rate term does not shrink with n, so a target below it is
never reached (nan).

Two rounds (stage 5 --target_halfwidth H --sample MAX): a pilot of PILOT_SIZE judged rows
(or MAX, if smaller); if its half-width is above H, one extension to the size the pilot
predicts for H, times EXTENSION_MARGIN, at most MAX (all of MAX when the pilot's estimator
cannot reach H at any size).

Half-widths here are (high - low) / 2, as fractions (the report prints points).
"""

from __future__ import annotations

import math

import numpy as np

from orbench.statistics.design import DEFAULT_FLOOR, SCORE, UNIFORM
from orbench.statistics.estimators import corrected_interval
from orbench.statistics.stratified import N_STRATA, Strata, by_group, merge_map, stratified_wilson, stratum_mid
from orbench.statistics.stats import Z_95

PILOT_SIZE = 100
EXTENSION_MARGIN = 1.25  # the pilot's variance is itself an estimate: aim past the target
TARGETS_PTS = (1, 2, 3)
_SIZE_STEPS = 20


def stratum_weights(floor: float = DEFAULT_FLOOR) -> np.ndarray:
    mid = stratum_mid(np.arange(N_STRATA))
    return floor + 2.0 * np.sqrt(mid * (1.0 - mid))


def judged_by_stratum(rows, total, design: str = UNIFORM, floor: float = DEFAULT_FLOOR) -> np.ndarray:
    """Expected judged rows per stratum, shape (R, H), when `total` (shape (R,)) are asked."""
    rows = np.asarray(rows, dtype=float)
    total = np.asarray(total, dtype=float)
    population = rows.sum(axis=1)
    if design == UNIFORM:
        return rows * (np.minimum(total, population) / np.where(population > 0, population, 1.0))[:, None]
    if design != SCORE:
        raise ValueError(f"unknown design {design!r}")
    w = stratum_weights(floor)[None, :]
    lo = np.zeros(total.shape)
    hi = np.full(total.shape, 1.0 / w.min())
    for _ in range(60):
        mid = (lo + hi) / 2.0
        low = (rows * np.minimum(1.0, mid[:, None] * w)).sum(axis=1) < total
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    return rows * np.minimum(1.0, hi[:, None] * w)


def predicted_halfwidth(strata: Strata, total, design: str = UNIFORM, floor: float = DEFAULT_FLOOR,
                        z: float | None = None) -> np.ndarray:
    """Half-width the sample's rates would give at `total` judged rows (shape (R,))."""
    merged = strata.merged()
    future = judged_by_stratum(strata.rows, total, design, floor)
    # The merged groups, grown: the same rate and effective-size ratio, more judged rows.
    grown = by_group(future, merge_map(strata.judged))
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(merged.judged > 0, grown / np.where(merged.judged > 0, merged.judged, 1.0), 0.0)
    later = Strata(merged.rows, grown, merged.weight * scale, merged.refused * scale, merged.weight_sq * scale)
    x, n, W = later.effective()
    _, low, high = stratified_wilson(x, n, W, z)
    return (high - low) / 2.0


def _smallest_size(halfwidth_at, population, target: float) -> np.ndarray:
    """Smallest integer n in [1, population] with halfwidth_at(n) <= target (vectorised)."""
    population = np.asarray(population, dtype=float)
    lo = np.zeros(population.shape)  # halfwidth_at(lo) > target (or lo = 0)
    hi = population.copy()  # at N every row is judged: the rate is known
    for _ in range(_SIZE_STEPS):
        mid = np.floor((lo + hi) / 2.0)
        ok = (mid >= 1) & (halfwidth_at(np.maximum(mid, 1.0)) <= target)
        lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
        if np.all(hi - lo <= 1):
            break
    return hi


def calls_for(strata: Strata, target: float, design: str = UNIFORM, floor: float = DEFAULT_FLOOR,
              z: float | None = None) -> np.ndarray:
    """Judge calls (rows judged in all) for a half-width of `target` (a fraction)."""
    return _smallest_size(lambda n: predicted_halfwidth(strata, n, design, floor, z),
                          strata.rows.sum(axis=1), target)


def calls_for_keyword(keyword_refused, population, missed, false_refusals, judged, target: float,
                      z: float = Z_95) -> np.ndarray:
    """The same for today's estimator (no score); nan where even every row would not do."""
    k, big_n, m, f, n = (np.atleast_1d(np.asarray(v, dtype=float))
                         for v in (keyword_refused, population, missed, false_refusals, judged))

    def halfwidth_at(size):
        r = size / np.where(n > 0, n, 1.0)
        _, low, high = corrected_interval(k, big_n, m * r, f * r, size, z)
        return (high - low) / 2.0

    need = _smallest_size(halfwidth_at, big_n, target)
    return np.where(halfwidth_at(big_n) <= target, need, np.nan)


def pilot_size(maximum: int) -> int:
    return min(maximum, PILOT_SIZE)


def extension_size(needed: float, pilot: int, maximum: int) -> int:
    """Rows to judge in all after a pilot that missed the target: the pilot's prediction with
    a margin (at least the pilot with the margin: the pilot was unlucky), within MAX."""
    if math.isnan(needed):
        return maximum
    return int(min(maximum, math.ceil(max(needed, pilot) * EXTENSION_MARGIN)))
