"""Which rows stage 5 judges, and with what inclusion probability (--design uniform|score).

Both designs start from the same permanent random number per row: the SHA-256 of the seed
and the row's identity (orbench.tables.sampling.rank), read as a number u in [0, 1). Nothing else
is random, so the same size, seed and input give the same rows on every machine.

- uniform (the default): the `size` rows of lowest rank, as before this module existed.
  Every row's inclusion probability is pi = size / N.
- score: Poisson sampling aimed at the detector's doubt. Row i is judged when u_i < pi_i,
  pi_i = min(1, c * (floor + doubt_i)); doubt is highest for scores near 0.5 (it is
  2 sqrt(s (1 - s)) at the middle of the row's score stratum, orbench.statistics.stratified), the floor
  gives every row a chance, and c is solved so that the pi add up to `size` (the expected
  number of judged rows; the actual number varies a little). A larger size raises c, hence
  every pi, so the rows of a smaller sample stay in (the same u, a higher bar).

pi depends on the row's score stratum only, so inside a stratum the judged rows are a
uniform sample: the estimator (orbench.statistics.stratified) weighs them by 1/pi.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Sequence

from orbench.tables.sampling import draw, rank

if TYPE_CHECKING:
    import numpy as np
# numpy and orbench.statistics.stratified (numpy) are imported in the functions that compute: stage 5's
# --help reads DESIGNS and DEFAULT_FLOOR from here and should not pay for numpy.

UNIFORM = "uniform"
SCORE = "score"
DESIGNS = (UNIFORM, SCORE)
DEFAULT_FLOOR = 0.5


def unit(seed: int, identity: str) -> float:
    """The row's permanent random number in [0, 1): the first 64 bits of its rank."""
    return int(rank(seed, identity)[:16], 16) / float(1 << 64)


def doubt(scores) -> np.ndarray:
    """2 sqrt(m (1 - m)) at the middle m of each score's stratum: 1 at 0.5, small at 0 and 1."""
    import numpy as np

    from orbench.statistics.stratified import stratum_mid, stratum_of

    mid = stratum_mid(stratum_of(scores))
    return 2.0 * np.sqrt(mid * (1.0 - mid))


def score_probabilities(scores, size, floor: float = DEFAULT_FLOOR) -> np.ndarray:
    """pi = min(1, c (floor + doubt)) with sum(pi) = size, per run (rows of a 2-D array);
    size is one number, or one per run.

    Exact: the rows of largest weight are taken with certainty one by one until c times the
    largest weight left is at most 1.
    """
    import numpy as np

    w = floor + doubt(np.atleast_2d(np.asarray(scores, dtype=float)))
    runs, rows = w.shape
    size = np.broadcast_to(np.asarray(size, dtype=float), (runs,))
    if np.all(size >= rows):
        return np.ones_like(w)
    order = np.argsort(-w, axis=1)
    ws = np.take_along_axis(w, order, axis=1)
    before = np.concatenate([np.zeros((runs, 1)), np.cumsum(ws, axis=1)[:, :-1]], axis=1)
    certain = np.arange(rows)[None, :]  # rows taken with certainty before position k
    with np.errstate(divide="ignore", invalid="ignore"):  # runs whose size takes every row
        c = (size[:, None] - certain) / (w.sum(axis=1, keepdims=True) - before)
    fits = c * ws <= 1.0 + 1e-12
    k = np.argmax(fits, axis=1)
    ck = c[np.arange(runs), k]
    return np.where((size >= rows)[:, None], 1.0, np.minimum(1.0, ck[:, None] * w))


def uniform_probability(population: int, size: int) -> float:
    return 1.0 if population <= 0 else min(1.0, size / population)


@dataclass(frozen=True)
class Design:
    """What .run.json records about a judged sample (under `sample_design`)."""

    name: str
    size: int  # judged rows asked for (uniform: exactly; score: expected)
    seed: int
    population: int  # candidate rows (stage 4 gave them a verdict)
    floor: float | None = None  # score only
    expected_rows: float | None = None  # score only: the sum of the pi
    strata_edges: tuple[float, ...] | None = None  # score only
    detector: str | None = None  # stage 4's detector fingerprint (its refusal_weights), when recorded

    def as_info(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Drawn:
    chosen: list[int]  # indices into the candidates, in input order
    pi: list[float]  # inclusion probability of each chosen row, same order
    design: Design


def draw_design(identities: Sequence[str], scores: Sequence[float] | None, size: int, seed: int,
                name: str = UNIFORM, floor: float = DEFAULT_FLOOR, detector: str | None = None) -> Drawn:
    """The judged rows of a design over the candidates (identities; scores for `score`)."""
    n_rows = len(identities)
    if name == UNIFORM:
        chosen = draw(identities, size, seed).chosen
        pi = uniform_probability(n_rows, size)
        return Drawn(chosen, [pi] * len(chosen), Design(UNIFORM, size, seed, n_rows, detector=detector))
    if name != SCORE:
        raise ValueError(f"unknown design {name!r}")
    if scores is None or len(scores) != n_rows:
        raise ValueError("the score design needs one score per candidate row")
    import numpy as np

    from orbench.statistics.stratified import STRATA_EDGES

    pis = score_probabilities(np.asarray(scores, dtype=float), size, floor)[0] if n_rows else np.zeros(0)
    chosen = [i for i in range(n_rows) if unit(seed, identities[i]) < pis[i]]
    design = Design(SCORE, size, seed, n_rows, floor=floor, expected_rows=round(float(pis.sum()), 3),
                    strata_edges=STRATA_EDGES, detector=detector)
    return Drawn(chosen, [float(pis[i]) for i in chosen], design)
