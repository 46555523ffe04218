"""One (model, set)'s corrected rate from its stage-4 rows and its judged sample, and the judge
calls that a half-width of ±1, ±2 or ±3 points would need.

Two estimators, chosen by what the files hold:
- `score` (orbench.statistics.stratified): when every scored stage-4 row has a `refusal_score`. The
  judged rows are weighed by their inclusion probabilities (1/pi), so either design works.
- `keyword` (orbench.statistics.estimators.corrected_interval, the estimator before scores were used):
  for files without a score (family rules, `generic`, older runs). It needs a uniform
  sample; a `score`-design sample is never read as one (the caller refuses it).
Both estimate the rate the judge would give if it judged every scored row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from orbench.statistics.design import DEFAULT_FLOOR, UNIFORM
from orbench.statistics.estimators import corrected_interval
from orbench.statistics.planning import TARGETS_PTS, calls_for, calls_for_keyword
from orbench.statistics.stratified import N_STRATA, Strata, strata_interval, stratum_of

SCORE_ESTIMATOR = "score"
KEYWORD_ESTIMATOR = "keyword"


@dataclass(frozen=True)
class Estimate:
    rate: float  # fractions
    low: float
    high: float
    estimator: str
    calls: dict[float, float] = field(default_factory=dict)  # points -> judge calls in all (nan: never)

    @property
    def halfwidth(self) -> float:
        return (self.high - self.low) / 2.0


def _strata(pop_scores, judged_scores, judged_refused, judged_pi) -> Strata:
    rows = np.bincount(stratum_of(pop_scores), minlength=N_STRATA).astype(float)
    h = stratum_of(judged_scores)
    pi = np.asarray(judged_pi, dtype=float)
    w = 1.0 / np.where(np.isfinite(pi) & (pi > 0), pi, 1.0)
    y = np.asarray(judged_refused, dtype=float)

    def total(values) -> np.ndarray:
        return np.bincount(h, weights=values, minlength=N_STRATA).astype(float)[None, :]

    return Strata(rows[None, :], total(np.ones_like(w)), total(w), total(w * y), total(w * w))


def has_scores(values) -> bool:
    v = np.asarray(values, dtype=float)
    return v.size > 0 and bool(np.all(np.isfinite(v)) and np.all((v >= 0) & (v <= 1)))


def estimate(pop_scores, pop_keyword, judged_scores, judged_keyword, judged_refused, judged_pi,
             design: str = UNIFORM, floor: float = DEFAULT_FLOOR,
             targets: Sequence[float] = TARGETS_PTS) -> Estimate:
    """pop_*: every scored stage-4 row; judged_*: the judged rows with a verdict from both.

    Scores may be None (no score column); pi may be nan (equal weights: a uniform sample).
    targets: half-widths in points to plan judge calls for.
    """
    pop_keyword = np.asarray(pop_keyword, dtype=bool)
    judged_keyword = np.asarray(judged_keyword, dtype=bool)
    y = np.asarray(judged_refused, dtype=bool)
    nan = math.nan
    if len(pop_keyword) == 0 or len(y) == 0:
        return Estimate(nan, nan, nan, KEYWORD_ESTIMATOR, {t: nan for t in targets})
    if pop_scores is not None and judged_scores is not None and has_scores(pop_scores) and has_scores(judged_scores):
        strata = _strata(pop_scores, judged_scores, y, judged_pi)
        est, low, high = (float(v[0]) for v in strata_interval(strata))
        calls = {p: float(calls_for(strata, p / 100.0, design, floor)[0]) for p in targets}
        return Estimate(est, low, high, SCORE_ESTIMATOR, calls)
    counts = (int(pop_keyword.sum()), len(pop_keyword), int((y & ~judged_keyword).sum()),
              int((~y & judged_keyword).sum()), len(y))
    est, low, high = (float(v) for v in corrected_interval(*counts))
    calls = {p: float(calls_for_keyword(*counts, p / 100.0)[0]) for p in targets}
    return Estimate(est, low, high, KEYWORD_ESTIMATOR, calls)
