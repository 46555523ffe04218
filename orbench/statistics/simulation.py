"""Seeded simulations of judged samples, on populations built from the development pool.

The scores are held out: each part of the pool (one XSTest model, rbr_gold, ...) is scored by
the detector fitted without it (orbench.refusal.loo.leave_one_out), so a score is as wrong
as it is on a model the detector has never seen. Those scores are cached on disk, keyed by
the shipped weights' fingerprint and the bytes of the pool, so a new detector or new pool
data recomputes them.

A population of N rows is drawn from one part's labelled rows with replacement: as they come
(the part's own refusal rate), or with a forced refusal rate (refusals and answers drawn
apart), optionally taking a forced share of the refusals from those the detector misses
(score below 0.5). The truth is the population's own share of refusals (the judge is taken
to be right: the corrected rate estimates the judge's rate). Every run draws a new
population, then the designs draw judged rows from it with one uniform number u per row:
uniform = the n rows of lowest u; score = u < pi (orbench.statistics.design). Growing a sample keeps u,
as stage 5 keeps each row's hash.
"""

from __future__ import annotations

import csv
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from orbench.statistics.design import DEFAULT_FLOOR, SCORE, UNIFORM, score_probabilities
from orbench.statistics.estimators import corrected_interval
from orbench.statistics.stratified import Strata, strata_from_rows, strata_interval, stratum_of

if TYPE_CHECKING:
    from orbench.refusal.loo import LooResult

DEFAULT_CACHE = Path(".orbench-cache") / "loo_scores"


@dataclass(frozen=True)
class Part:
    scores: np.ndarray  # held-out refusal_score, 4 decimals as stage 4 writes it
    refused: np.ndarray  # the human label: 1 refusal, 0 answer


def _pool_fingerprint(folder: Path, config: Path) -> str:
    from orbench.refusal import default_model
    from orbench.refusal.pool import load_config

    digest = hashlib.sha256(default_model().fingerprint.encode())
    digest.update(config.read_bytes())
    for source in load_config(config):
        for path in sorted(folder.glob(source.files)):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def held_out_parts(pool_dir: str | Path | None = None, cache_dir: str | Path = DEFAULT_CACHE,
                   progress: bool = False, computed: Callable[[], LooResult] | None = None) -> dict[str, Part]:
    """Every pool part's labelled rows (refusal or answer, with text) and held-out scores.
    `computed`, when given, returns the leave-one-out of this pool already run with the default
    settings (the tests share one per run); it is called only when the cache lacks the scores."""
    from orbench.refusal.loo import leave_one_out
    from orbench.refusal.pool import DEFAULT_CONFIG, REFUSAL, ANSWER, load_pool, pool_dir as find_pool

    folder = find_pool(pool_dir)
    path = Path(cache_dir) / f"loo_{_pool_fingerprint(folder, DEFAULT_CONFIG)}.csv"
    if not path.is_file():
        result = computed() if computed is not None else leave_one_out(load_pool(folder), progress=progress)
        keep = [s for s in result.held_out if s.score is not None and s.row.gold in (REFUSAL, ANSWER)]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two processes may fill the cache at once
        with tmp.open("w", encoding="utf-8", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(["part", "refused", "score"])
            out.writerows([s.row.part, int(s.row.gold == REFUSAL), f"{s.score:.4f}"] for s in keep)
        tmp.replace(path)
    rows: dict[str, tuple[list[float], list[float]]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for r in csv.DictReader(handle):
            scores, refused = rows.setdefault(r["part"], ([], []))
            scores.append(float(r["score"]))
            refused.append(float(r["refused"]))
    return {p: Part(np.array(s), np.array(y)) for p, (s, y) in rows.items()}


@dataclass(frozen=True)
class Case:
    """How to build a population from one part."""

    name: str
    part: str
    rate: float | None = None  # forced refusal rate; None = the part's own
    missed_share: float | None = None  # share of refusals drawn from those scored below 0.5
    shuffle: bool = False  # give the scores to random rows: a score that carries nothing
    population: int = 2000


def populations(part: Part, case: Case, runs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(scores, refused), each of shape (runs, N)."""
    big_n = case.population
    if case.rate is None:
        idx = rng.integers(0, len(part.scores), size=(runs, big_n))
    else:
        ref = np.flatnonzero(part.refused == 1)
        ans = np.flatnonzero(part.refused == 0)
        n_ref = rng.binomial(big_n, case.rate, size=runs)
        pick = rng.random((runs, big_n))
        is_ref = np.arange(big_n)[None, :] < n_ref[:, None]  # the first n_ref rows of a run refuse
        refusal_idx = ref[(pick * len(ref)).astype(int)]
        if case.missed_share is not None:
            missed, caught = ref[part.scores[ref] < 0.5], ref[part.scores[ref] >= 0.5]
            from_missed = rng.random((runs, big_n)) < case.missed_share
            refusal_idx = np.where(from_missed, missed[(pick * len(missed)).astype(int)],
                                   caught[(pick * len(caught)).astype(int)])
        answer_idx = ans[(rng.random((runs, big_n)) * len(ans)).astype(int)]
        idx = np.where(is_ref, refusal_idx, answer_idx)
    scores, refused = part.scores[idx], part.refused[idx]
    if case.shuffle:
        scores = rng.permuted(scores, axis=1)
    return scores, refused


@dataclass(frozen=True)
class Draw:
    """One design's judged rows in every run: the mask and each row's inclusion probability."""

    judged: np.ndarray
    pi: np.ndarray


def design_draw(scores: np.ndarray, u: np.ndarray, size, design: str, floor: float = DEFAULT_FLOOR) -> Draw:
    """size: one number, or one per run (two rounds)."""
    runs, big_n = scores.shape
    size = np.broadcast_to(np.asarray(size, dtype=float), (runs,))
    if design == UNIFORM:
        position = np.empty((runs, big_n), dtype=np.intp)  # each row's rank of u in its run
        np.put_along_axis(position, np.argsort(u, axis=1), np.arange(big_n)[None, :], axis=1)
        judged = position < size[:, None]
        return Draw(judged, np.broadcast_to(np.minimum(1.0, size / big_n)[:, None], scores.shape))
    if design != SCORE:
        raise ValueError(f"unknown design {design!r}")
    pi = score_probabilities(scores, size, floor)
    return Draw(u < pi, pi)


def score_strata(scores: np.ndarray, refused: np.ndarray, d: Draw) -> Strata:
    return strata_from_rows(stratum_of(scores), d.judged, refused, d.pi)


def new_interval(scores, refused, d: Draw):
    """The score-powered estimate (orbench.statistics.stratified)."""
    return strata_interval(score_strata(scores, refused, d))


def verdict_interval(scores, refused, d: Draw):
    """The middle column: the same estimand and interval, strata = the keyword verdict only."""
    return strata_interval(strata_from_rows((scores >= 0.5).astype(int), d.judged, refused, d.pi, 2))


def today_interval(scores, refused, d: Draw):
    """Today's estimator (orbench.statistics.estimators.corrected_interval) on the same judged rows."""
    keyword = scores >= 0.5
    y = refused == 1
    n = d.judged.sum(axis=1)
    missed = (d.judged & y & ~keyword).sum(axis=1)
    false = (d.judged & ~y & keyword).sum(axis=1)
    return corrected_interval(keyword.sum(axis=1), scores.shape[1], missed, false, np.maximum(n, 1))


@dataclass(frozen=True)
class Cell:
    coverage: float  # share of runs whose interval holds the truth
    halfwidth: float  # mean of (high - low) / 2, in points
    judged: float  # mean judged rows

    def text(self) -> str:
        return f"{100 * self.coverage:.1f}% ±{self.halfwidth:.2f}"


def cell(truth: np.ndarray, interval, judged: np.ndarray) -> Cell:
    _, low, high = interval
    eps = 1e-9
    covered = (low - eps <= truth) & (truth <= high + eps)
    return Cell(float(np.mean(covered)), float(50.0 * np.mean(high - low)), float(np.mean(judged)))
