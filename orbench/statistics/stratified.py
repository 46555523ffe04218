"""The score-powered corrected rate: the judge's rate, post-stratified on stage 4's score.

Estimand: the rate the judge would give if it judged every one of the N scored rows of a
stage-4 file (a finite population). The only randomness is which rows were judged.

Estimator. The rows are cut into strata by `refusal_score` (STRATA_EDGES). In each stratum
the judged rows give the judge's refusal rate there, and the strata are added up by their
share of all N rows:

    rate = sum_h (N_h / N) * p_h

This is the difference (prediction-powered) estimator whose prediction is the judge's own
rate in each score band, measured on the model at hand: a per-model recalibration of the
score that needs no fitted curve and no cross-fitting (the interval below accounts for the
p_h being estimated from the same rows). Where the score ranks refusals above answers, the
strata are nearly pure and the interval is narrow; where it ranks nothing, the strata are
like random groups and the interval is that of the judged sample alone.

Interval: the stratified score (Wilson) interval. For a candidate rate t, each stratum's p_h
is refitted by maximum likelihood under sum_h W_h p_h = t, and t is inside when
(rate - t)^2 <= q^2 * sum_h W_h^2 p_h (1 - p_h) / n'_h, q being Student's t at 97.5% with the
Welch-Satterthwaite degrees of freedom of that sum (1.96 for large strata). With one stratum
and q = 1.96 this is exactly the Wilson interval. Like Wilson, it keeps a width when a stratum shows no refusal (or no answer)
at all: zero refusals in 100 judged rows of a band still leaves up to about 3.7% there.
n'_h carries the design: the Kish effective size of the judged rows (their weights 1/pi)
divided by the finite-population correction (N_h - n_h) / (N_h - 1), so a stratum judged
in full is known exactly.

Strata with fewer than MIN_JUDGED judged rows are merged with their neighbours (in score
order) first; merging looks only at how many rows were judged, never at their verdicts.
Why this interval and these settings (and not a cross-fitted PPI++ or per-stratum MOVER),
by simulation: docs/statistics/, benchmarks/estimator_candidates.py, orbench.statistics.coverage.

Every function takes numpy arrays with a leading axis of runs (the coverage simulations
compute thousands of intervals at once); the report calls them with one run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orbench.statistics.stats import Z_95

STRATA_EDGES = (0.0, 0.03, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.97, 1.0)
N_STRATA = len(STRATA_EDGES) - 1
MIN_JUDGED = 10  # judged rows a stratum needs before it stands on its own
_MU_RANGE = 40.0  # asinh of the largest Lagrange multiplier tried (about 1e17)
_STEPS = 52  # bisection steps on asinh(mu) for each end of the interval


def stratum_of(scores) -> np.ndarray:
    """The stratum (0 .. N_STRATA - 1) of each score; a score of exactly 1 is in the last."""
    s = np.asarray(scores, dtype=float)
    return np.clip(np.searchsorted(STRATA_EDGES, s, side="right") - 1, 0, N_STRATA - 1)


def stratum_mid(h) -> np.ndarray:
    edges = np.asarray(STRATA_EDGES)
    return (edges[np.asarray(h)] + edges[np.asarray(h) + 1]) / 2.0


def _constrained_p(mu, x, n, W) -> np.ndarray:
    """Each stratum's maximum-likelihood rate for the Lagrange multiplier mu (shape (R, 1)).

    Maximises x log p + (n - x) log(1 - p) - mu W p: the root in [0, 1] of
    a p^2 - b p + x = 0 (a = mu W, b = n + a), in the form without cancellation for the
    sign of b. A stratum with no refusal stays at 0 until a < -n, then 1 + n / a.
    """
    a = mu * W
    b = n + a
    root = np.sqrt(np.clip(b * b - 4.0 * a * x, 0.0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        plus = 2.0 * x / np.where(b + root > 0, b + root, 1.0)  # b >= 0
        minus = (b - root) / np.where(a != 0, 2.0 * a, 1.0)  # b < 0, hence a < 0
    p = np.where(b >= 0, np.where(b + root > 0, plus, 0.0), minus)
    return np.clip(np.where(n > 0, p, 0.0), 0.0, 1.0)


def stratified_wilson(x, n, W, z: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) of sum_h W_h x_h / n_h, from arrays of shape (R, H).

    x: refusals (effective, may be fractional), n: effective judged rows, W: population
    shares (each run's W sum to 1). Strata with n == 0 must have W == 0. z: the normal
    quantile; by default Student's t at 97.5% with the Welch-Satterthwaite degrees of freedom
    of the strata's variance (small strata widen the interval a little, as a t test would).

    The refitted rates trace one path as the Lagrange multiplier mu runs from 0 (the
    estimate) to +inf (rate 0) or -inf (rate 1); each end of the interval is where that path
    leaves the acceptance region, found by bisection on asinh(mu).
    """
    x = np.asarray(x, dtype=float)
    n = np.asarray(n, dtype=float)
    W = np.asarray(W, dtype=float)
    safe_n = np.where(n > 0, n, 1.0)
    est = (W * np.where(n > 0, x / safe_n, 0.0)).sum(axis=1)
    zz = t_quantile_975(satterthwaite_df(x, n, W)) if z is None else np.full(est.shape, float(z))

    def gap(s):  # > 0 where the path's point at asinh(mu) = s is outside the interval
        p = _constrained_p(np.sinh(s)[:, None], x, n, W)
        rate = (W * p).sum(axis=1)
        return (est - rate) ** 2 - zz * zz * (W * W * p * (1.0 - p) / safe_n).sum(axis=1), rate

    ends = []
    for far_end, beyond in ((_MU_RANGE, 0.0), (-_MU_RANGE, 1.0)):
        inside, outside = np.zeros_like(est), np.full(est.shape, far_end)
        for _ in range(_STEPS):
            mid = (inside + outside) / 2.0
            out = gap(mid)[0] > 0
            inside, outside = np.where(out, inside, mid), np.where(out, mid, outside)
        reaches = gap(np.full(est.shape, far_end))[0] > 0
        ends.append(np.where(reaches, gap((inside + outside) / 2.0)[1], beyond))
    return est, np.minimum(ends[0], est), np.maximum(ends[1], est)


def satterthwaite_df(x, n, W) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of sum_h W_h^2 p_h (1 - p_h) / n_h, with each p_h
    taken as (x_h + 0.5) / (n_h + 1) so that a stratum with no refusal still counts."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (x + 0.5) / (n + 1.0)
        a = np.where(n > 0, W * W * p * (1.0 - p) / np.where(n > 0, n, 1.0), 0.0)
        per = np.where(n > 1, a * a / np.maximum(n - 1.0, 1.0), 0.0)
        df = a.sum(axis=1) ** 2 / per.sum(axis=1)
    return np.where(np.isfinite(df) & (df > 0), df, np.inf)


def t_quantile_975(df) -> np.ndarray:
    """The 0.975 quantile of Student's t (Cornish-Fisher expansion; within 0.2% for df >= 3)."""
    z = Z_95
    v = np.maximum(np.asarray(df, dtype=float), 1.0)
    g1 = (z ** 3 + z) / 4.0
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96.0
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384.0
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160.0
    return z + g1 / v + g2 / v ** 2 + g3 / v ** 3 + g4 / v ** 4


def merge_map(judged, minimum: int = MIN_JUDGED) -> np.ndarray:
    """Group of each stratum, shape (R, H): strata in score order are gathered until a group
    holds `minimum` judged rows; a short last group joins the one before it."""
    judged = np.asarray(judged, dtype=float)
    runs, strata = judged.shape
    group = np.zeros((runs, strata), dtype=int)
    current = np.zeros(runs, dtype=int)
    held = np.zeros(runs)
    for h in range(strata):
        group[:, h] = current
        held = held + judged[:, h]
        full = held >= minimum
        current = np.where(full, current + 1, current)
        held = np.where(full, 0.0, held)
    short = (group == current[:, None]) & (current[:, None] > 0)
    return np.where(short, group - 1, group)


def by_group(values, group) -> np.ndarray:
    out = np.zeros(values.shape)
    for g in range(values.shape[1]):
        out[:, g] = np.where(group == g, values, 0.0).sum(axis=1)
    return out


@dataclass(frozen=True)
class Strata:
    """Per run and stratum (shape (R, H)): population rows, and the judged rows' count, sum of
    weights 1/pi, weighted refusals and sum of squared weights."""

    rows: np.ndarray
    judged: np.ndarray
    weight: np.ndarray
    refused: np.ndarray
    weight_sq: np.ndarray

    def merged(self, minimum: int = MIN_JUDGED) -> "Strata":
        group = merge_map(self.judged, minimum)
        return Strata(*(by_group(a, group) for a in (self.rows, self.judged, self.weight,
                                                      self.refused, self.weight_sq)))

    def effective(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(refusals, judged rows, shares) in the effective sizes the interval uses."""
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(self.weight > 0, self.refused / np.where(self.weight > 0, self.weight, 1.0), 0.0)
            kish = np.where(self.weight_sq > 0, self.weight ** 2 / np.where(self.weight_sq > 0, self.weight_sq, 1.0), 0.0)
            fpc = np.where(self.rows > 1, (self.rows - self.judged) / np.maximum(self.rows - 1, 1.0), 0.0)
            size = np.where(self.judged > 0, np.where(fpc > 0, kish / np.maximum(fpc, 1e-12), 1e12), 0.0)
        total = self.rows.sum(axis=1, keepdims=True)
        return rate * size, size, self.rows / np.where(total > 0, total, 1.0)


def strata_from_rows(stratum, judged, refused, pi, n_strata: int = N_STRATA) -> Strata:
    """Strata sums from per-row arrays of shape (R, N) (or (N,) for one run).

    stratum: each population row's stratum (stratum_of its score; or any labels 0 .. n_strata
    - 1); judged: the row was judged and has a verdict; refused: the judge's verdict (read
    only where judged); pi: the row's inclusion probability (read only where judged; nan
    means equal weights).
    """
    h = np.atleast_2d(np.asarray(stratum, dtype=int))
    j = np.atleast_2d(np.asarray(judged, dtype=bool))
    y = np.atleast_2d(np.asarray(refused, dtype=float))
    p = np.atleast_2d(np.asarray(pi, dtype=float))
    w = np.where(j, 1.0 / np.where(np.isfinite(p) & (p > 0), p, 1.0), 0.0)
    runs = h.shape[0]
    cell = (np.arange(runs)[:, None] * n_strata + h).ravel()

    def total(values) -> np.ndarray:
        flat = np.broadcast_to(values, h.shape).ravel()
        return np.bincount(cell, weights=flat, minlength=runs * n_strata).reshape(runs, n_strata)

    return Strata(total(1.0), total(j.astype(float)), total(w), total(np.where(j, w * np.nan_to_num(y), 0.0)),
                  total(w * w))


def strata_interval(strata: Strata, z: float | None = None,
                    minimum: int = MIN_JUDGED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) per run; nan where a run has no judged row."""
    x, n, W = strata.merged(minimum).effective()
    est, low, high = stratified_wilson(x, n, W, z)
    none = strata.judged.sum(axis=1) <= 0
    nan = np.full(est.shape, np.nan)
    return np.where(none, nan, est), np.where(none, nan, low), np.where(none, nan, high)
