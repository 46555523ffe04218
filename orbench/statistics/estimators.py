"""The corrected rejection rate: keyword verdicts on every row, judge verdicts on a sample.

The estimate is prediction-powered inference (PPI; Angelopoulos et al., Science 2023) for a
mean: the keyword rate over all N scored rows plus the mean of (judge - keyword) over the n
judged rows of a uniform random sample,

    corrected = K / N + (missed - false_refusals) / n

where K counts the rows the keyword rules call refusals, `missed` the judged rows the judge
calls a refusal and the keyword rules do not, and `false_refusals` the reverse.

Two intervals are computed:
- `ppi_normal_interval`: the classic PPI interval (normal approximation, both variances).
  It matches `ppi_py.ppi_mean_ci(..., lam=1)`; it is here to be tested against that
  package. It collapses to a point when the sample shows no disagreement.
- `corrected_interval`: the one the report prints. Wilson score bounds on the two
  disagreement rates are combined by MOVER (Newcombe 1998; Zou & Donner 2008) into bounds
  on their difference, using the (negative) correlation of two cells of one multinomial;
  those are combined again, by MOVER, with the Wilson bounds of the keyword rate. It stays
  valid when the sample shows no disagreement at all: 0 of n still gives an upper bound of
  about 1.9 / n on each disagreement rate.

Every function takes counts, as numbers or numpy arrays of the same shape (the coverage
simulations call them on thousands of runs at once), and returns fractions in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orbench.statistics.stats import Z_95


def wilson_bounds(successes, trials, z: float = Z_95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for successes / trials, elementwise; nan where trials == 0."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        z2 = z * z
        denom = 1.0 + z2 / n
        centre = (p + z2 / (2.0 * n)) / denom
        half = (z / denom) * np.sqrt(np.clip(p * (1.0 - p), 0.0, None) / n + z2 / (4.0 * n * n))
    low = np.where(k <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    bad = n <= 0
    return np.where(bad, np.nan, low), np.where(bad, np.nan, high)


def difference_bounds(missed, false_refusals, judged, z: float = Z_95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimate and MOVER bounds of (missed - false_refusals) / judged.

    The two counts are two cells of one multinomial over the judged rows, so their
    proportions are negatively correlated: corr = -sqrt(a b / ((1 - a)(1 - b))). That
    correlation widens the interval of their difference, and is used here.
    """
    m = np.asarray(missed, dtype=float)
    f = np.asarray(false_refusals, dtype=float)
    n = np.asarray(judged, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        a, b = m / n, f / n
        la, ua = wilson_bounds(m, n, z)
        lb, ub = wilson_bounds(f, n, z)
        denom = (1.0 - a) * (1.0 - b)
        r = np.where(denom > 0, -np.sqrt(np.clip(a * b, 0.0, None) / np.where(denom > 0, denom, 1.0)), 0.0)
        d = a - b
        # Lower end: a at its lower bound, b at its upper bound; upper end the reverse.
        dl1, dl2 = a - la, ub - b
        du1, du2 = ua - a, b - lb
        low = d - np.sqrt(np.clip(dl1 ** 2 + dl2 ** 2 - 2.0 * r * dl1 * dl2, 0.0, None))
        high = d + np.sqrt(np.clip(du1 ** 2 + du2 ** 2 - 2.0 * r * du1 * du2, 0.0, None))
    return d, low, high


def corrected_interval(keyword_refused, population, missed, false_refusals, judged,
                       z: float = Z_95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The corrected rate and its 95% interval (estimate, low, high), clipped to [0, 1].

    keyword_refused / population: the keyword rate over all scored rows; missed,
    false_refusals and judged: the disagreements on the judged sample. The keyword rate's
    own uncertainty (the rows are one draw of the model's behaviour) is added by MOVER to
    the difference's, taken as independent of it: the sample is a small part of the rows.
    """
    k = np.asarray(keyword_refused, dtype=float)
    big_n = np.asarray(population, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        kr = k / big_n
        lk, uk = wilson_bounds(k, big_n, z)
        d, ld, ud = difference_bounds(missed, false_refusals, judged, z)
        est = kr + d
        low = est - np.sqrt((kr - lk) ** 2 + (d - ld) ** 2)
        high = est + np.sqrt((uk - kr) ** 2 + (ud - d) ** 2)
    return np.clip(est, 0.0, 1.0), np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def ppi_normal_interval(keyword_all, keyword_judged, judge_judged,
                        z: float = Z_95) -> tuple[float, float, float]:
    """Classic PPI for a mean (lam = 1) on 0/1 verdict arrays: (estimate, low, high).

    keyword_all: the keyword verdict of every row; keyword_judged and judge_judged: the
    keyword's and the judge's verdicts on the judged rows, in the same order. Population
    standard deviations (ddof = 0), as ppi_py computes them. Not clipped.
    """
    y_all = np.asarray(keyword_all, dtype=float)
    yhat = np.asarray(keyword_judged, dtype=float)
    y = np.asarray(judge_judged, dtype=float)
    rect = y - yhat
    est = float(y_all.mean() + rect.mean())
    se = float(np.sqrt(y_all.var() / len(y_all) + rect.var() / len(y)))
    return est, est - z * se, est + z * se


@dataclass(frozen=True)
class Correction:
    """The keyword rate of one (model, set), measured against a judge on a sample."""

    population: int  # scored rows with a keyword verdict
    keyword_refused: int
    judged: int  # sampled rows the judge scored (and the keyword rules too)
    judge_refused: int
    missed: int  # judge: refusal, keyword: answer
    false_refusals: int  # judge: answer, keyword: refusal
    rate: float  # corrected rate, fraction
    ci_low: float
    ci_high: float

    @property
    def keyword_rate(self) -> float:
        return self.keyword_refused / self.population if self.population else float("nan")

    @property
    def judge_rate(self) -> float:
        """The judge's rate over the sample only: never the model's rate over all rows."""
        return self.judge_refused / self.judged if self.judged else float("nan")

    @property
    def agreement(self) -> float:
        return 1.0 - (self.missed + self.false_refusals) / self.judged if self.judged else float("nan")


def correct(keyword_refused: int, population: int, judge_refused: int, missed: int,
            false_refusals: int, judged: int, z: float = Z_95) -> Correction:
    """The corrected rate of one (model, set) from its counts."""
    if judged <= 0 or population <= 0:
        nan = float("nan")
        est = low = high = nan
    else:
        est, low, high = (float(v) for v in corrected_interval(
            keyword_refused, population, missed, false_refusals, judged, z))
    return Correction(population=population, keyword_refused=keyword_refused, judged=judged,
                      judge_refused=judge_refused, missed=missed, false_refusals=false_refusals,
                      rate=est, ci_low=low, ci_high=high)


def simulate_counts(p: float, sensitivity: float, false_alarm: float, judged: int, population: int,
                    runs: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Seeded draws of what a run would count, for coverage checks and width tables.

    A model whose judge-refusal rate is p; keyword rules that catch a share `sensitivity` of
    its refusals and flag a share `false_alarm` of its answers. Each run draws `population`
    rows, then a uniform sample of `judged` of them without replacement. Returns, per run:
    the population's cell counts (both refuse, missed, false refusal, neither; shape
    (runs, 4)) and the sample's both / missed / false-refusal counts.
    """
    rng = np.random.default_rng(seed)
    cells = [p * sensitivity, p * (1 - sensitivity), (1 - p) * false_alarm, (1 - p) * (1 - false_alarm)]
    pop = rng.multinomial(population, cells, size=runs)
    both = rng.hypergeometric(pop[:, 0], population - pop[:, 0], judged)
    missed = rng.hypergeometric(pop[:, 1], pop[:, 2] + pop[:, 3], judged - both)
    false = rng.hypergeometric(pop[:, 2], pop[:, 3], judged - both - missed)
    return pop, both, missed, false
