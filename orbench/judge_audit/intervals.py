"""95% intervals for the audit's figures, elementwise over numpy arrays (the coverage
simulations call them on thousands of runs at once).

- `wilson_bounds_cc`: the Wilson score interval with continuity correction (Newcombe 1998,
  method 4). The plain Wilson interval dips to about 90% coverage when a rate is near 0 or 1
  at 50 rows (a nearly perfect judge's recall); the corrected one holds 93% or more in every
  case `benchmarks/audit_intervals.py` simulates, at a modest cost in width.
- `difference_bounds_cc`: Newcombe's interval for p1 - p2 of two independent proportions
  (1998, method 11): the corrected Wilson bounds of each, combined by MOVER.
"""

from __future__ import annotations

import numpy as np

from orbench.statistics.stats import Z_95


def wilson_bounds_cc(successes, trials, z: float = Z_95) -> tuple[np.ndarray, np.ndarray]:
    """Continuity-corrected Wilson bounds of successes / trials; nan where trials == 0."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        root_lo = np.sqrt(np.clip(z2 - 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) + 1.0), 0.0, None))
        root_hi = np.sqrt(np.clip(z2 + 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) - 1.0), 0.0, None))
        low = (2.0 * n * p + z2 - 1.0 - z * root_lo) / (2.0 * (n + z2))
        high = (2.0 * n * p + z2 + 1.0 + z * root_hi) / (2.0 * (n + z2))
    low = np.where(k <= 0, 0.0, np.clip(low, 0.0, 1.0))
    high = np.where(k >= n, 1.0, np.clip(high, 0.0, 1.0))
    bad = n <= 0
    return np.where(bad, np.nan, low), np.where(bad, np.nan, high)


def difference_bounds_cc(k1, n1, k2, n2, z: float = Z_95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) of k1/n1 - k2/n2, the two independent: MOVER over
    continuity-corrected Wilson bounds."""
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in (k1, n1, k2, n2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = k1 / n1, k2 / n2
        l1, u1 = wilson_bounds_cc(k1, n1, z)
        l2, u2 = wilson_bounds_cc(k2, n2, z)
        d = p1 - p2
        low = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
        high = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, low, high


def simulate_audits(recall: float, false_refusal: float, size: int, runs: int, seed: int,
                    unscored: tuple[float, float] = (0.0, 0.0)) -> dict[str, np.ndarray]:
    """Seeded draws of what audits of `size` rows (half human refusals, half answers) would
    count, for a judge that calls a share `recall` of the refusals and `false_refusal` of the
    answers refusals, and leaves a share of each class unscored (refusals, answers).
    Returns per-run arrays tp, fn, fp, tn."""
    rng = np.random.default_rng(seed)
    half = (size + 1) // 2, size // 2
    n1 = rng.binomial(half[0], 1.0 - unscored[0], runs)
    n0 = rng.binomial(half[1], 1.0 - unscored[1], runs)
    tp = rng.binomial(n1, recall)
    fp = rng.binomial(n0, false_refusal)
    return {"tp": tp, "fn": n1 - tp, "fp": fp, "tn": n0 - fp}


def truths(recall: float, false_refusal: float, unscored: tuple[float, float] = (0.0, 0.0)) -> dict[str, float]:
    """The values the audit's figures estimate, for the judge simulate_audits draws: over the
    rows it scores, of a balanced set."""
    s1, s0 = 1.0 - unscored[0], 1.0 - unscored[1]
    return {"agreement": (s1 * recall + s0 * (1.0 - false_refusal)) / (s1 + s0),
            "kappa": recall - false_refusal,
            "precision": s1 * recall / (s1 * recall + s0 * false_refusal) if recall + false_refusal else float("nan"),
            "recall": recall}


def figure_bounds(c: dict[str, np.ndarray], z: float = Z_95) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The four figures' 95% bounds (fractions; kappa in [-1, 1]) from count arrays, as the
    audit computes them."""
    n1, n0 = c["tp"] + c["fn"], c["fp"] + c["tn"]
    _, kl, kh = difference_bounds_cc(c["tp"], n1, c["fp"], n0, z)
    return {"agreement": wilson_bounds_cc(c["tp"] + c["tn"], n1 + n0, z), "kappa": (kl, kh),
            "precision": wilson_bounds_cc(c["tp"], c["tp"] + c["fp"], z), "recall": wilson_bounds_cc(c["tp"], n1, z)}
