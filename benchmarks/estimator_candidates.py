"""The estimators that were tried for the score-powered corrected rate, side by side.

    python benchmarks/estimator_candidates.py              # the table in docs/statistics/corrected-rates.md
    python benchmarks/estimator_candidates.py --runs 2000

Same populations and samples as `python -m orbench.statistics.coverage` (held-out pool scores, N =
2,000, uniform samples); coverage of the 95% interval and mean half-width in points for:
- PPI++, cross-fitted: prediction = a logistic recalibration of the score (on its logit,
  shrunk toward the shipped calibration, fitted on 4 of 5 folds of the judged rows and
  applied to the fifth; unjudged rows get the mean of the 5 fits), times a power-tuning
  lambda in [0, 1]; normal interval from the residuals' variance (with the finite-population
  correction).
- the same with a Wilson-kind floor: z^2 pseudo-observations of residual +-1 added to the
  residuals' sum of squares (the width Wilson keeps at 0 events of n).
- strata + MOVER: post-stratified on the score, Wilson bounds per stratum combined by MOVER.
- strata + stratified Wilson: what orbench.statistics.stratified does (the one chosen).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orbench.statistics.coverage import BY_CASE_NAME, hash_name  # noqa: E402
from orbench.statistics.design import UNIFORM  # noqa: E402
from orbench.statistics.estimators import wilson_bounds  # noqa: E402
from orbench.statistics.simulation import Case, cell, design_draw, held_out_parts, new_interval, populations, score_strata  # noqa: E402
from orbench.statistics.stats import Z_95  # noqa: E402

CASES = ("refuses 2%, weak detector", "refuses 98%, weak detector", "detector badly wrong", "score carries nothing")
SOURCES = ("xstest/gpt4", "xstest/mistralguard")
SIZES = (50, 300)
SHRINK = 5.0  # the recalibration's pull toward (0, 1), in judged rows
FOLDS = 5


def _recalibrate(logit, refused, weight, steps: int = 12):
    """(a, b) of p = sigmoid(a + b logit), shrunk toward (0, 1); per run, by Newton steps."""
    a = np.zeros(logit.shape[0])
    b = np.ones(logit.shape[0])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(a[:, None] + b[:, None] * logit, -30, 30)))
        r, v = weight * (p - refused), weight * p * (1 - p)
        ga, gb = r.sum(1) + SHRINK * a, (r * logit).sum(1) + SHRINK * (b - 1)
        haa, hab, hbb = v.sum(1) + SHRINK, (v * logit).sum(1), (v * logit * logit).sum(1) + SHRINK
        det = haa * hbb - hab * hab
        a, b = a - (hbb * ga - hab * gb) / det, b - (haa * gb - hab * ga) / det
    return a, b


def ppi_crossfit(scores, refused, judged, rng, floor: bool):
    runs, big_n = scores.shape
    s = np.clip(scores, 1e-4, 1 - 1e-4)
    logit = np.log(s / (1 - s))
    fold = rng.integers(0, FOLDS, size=scores.shape)
    mean_fit, own_fit = np.zeros(scores.shape), np.zeros(scores.shape)
    for k in range(FOLDS):
        a, b = _recalibrate(logit, refused, np.where(judged & (fold != k), 1.0, 0.0))
        g = 1.0 / (1.0 + np.exp(-np.clip(a[:, None] + b[:, None] * logit, -30, 30)))
        mean_fit += g / FOLDS
        own_fit = np.where(fold == k, g, own_fit)
    n = judged.sum(1)
    w = judged.astype(float)
    my, mg = (w * refused).sum(1) / n, (w * own_fit).sum(1) / n
    cov = (w * (refused - my[:, None]) * (own_fit - mg[:, None])).sum(1)
    var = (w * (own_fit - mg[:, None]) ** 2).sum(1)
    lam = np.clip(np.where(var > 0, cov / np.where(var > 0, var, 1), 0.0), 0.0, 1.0)
    resid = refused - lam[:, None] * own_fit
    mean_resid = (w * resid).sum(1) / n
    est = lam * mean_fit.mean(1) + mean_resid
    squares = (w * (resid - mean_resid[:, None]) ** 2).sum(1) + (Z_95 ** 2 if floor else 0.0)
    half = Z_95 * np.sqrt((1 - n / big_n) * squares / (n - 1) / n)
    return est, np.clip(est - half, 0, 1), np.clip(est + half, 0, 1)


def strata_mover(scores, refused, d):
    x, n, W = score_strata(scores, refused, d).merged().effective()
    p = np.where(n > 0, x / np.where(n > 0, n, 1), 0.0)
    lo, hi = wilson_bounds(x, np.where(n > 0, n, 1))
    lo, hi = np.where(n > 0, lo, p), np.where(n > 0, hi, p)
    est = (W * p).sum(1)
    return (est, est - np.sqrt((W * W * (p - lo) ** 2).sum(1)), est + np.sqrt((W * W * (hi - p) ** 2).sum(1)))


COLUMNS = ("PPI++ cross-fit", "PPI++ cross-fit + Wilson-kind floor", "strata + MOVER", "strata + stratified Wilson")


def row(parts, case: Case, size: int, runs: int, seed: int) -> list[str]:
    rng = np.random.default_rng([seed, hash_name(case.name), size])
    scores, refused = populations(parts[case.part], case, runs, rng)
    truth = refused.mean(1)
    d = design_draw(scores, rng.random(scores.shape), size, UNIFORM)
    n = d.judged.sum(1)
    out = [ppi_crossfit(scores, refused, d.judged, rng, False), ppi_crossfit(scores, refused, d.judged, rng, True),
           strata_mover(scores, refused, d), new_interval(scores, refused, d)]
    return [cell(truth, interval, n).text() for interval in out]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    parts = held_out_parts()
    cases = [BY_CASE_NAME[c] for c in CASES] + [Case(s, s) for s in SOURCES]
    print(f"Coverage and mean half-width (points), {args.runs} runs per cell, seed {args.seed}, N = 2,000, uniform samples.\n")
    print("| case | judged rows | " + " | ".join(COLUMNS) + " |")
    print("|---|---:|" + "---|" * len(COLUMNS))
    for case in cases:
        for size in SIZES:
            print(f"| {case.name} | {size} | " + " | ".join(row(parts, case, size, args.runs, args.seed)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
