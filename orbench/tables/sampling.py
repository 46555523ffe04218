"""Choosing the uniform random sample of rows that stage 5 judges (--sample N --seed S).

Each candidate row gets a rank: the SHA-256 of the seed and the row's identity (the hash of
its prompt, response and category, with its occurrence number for repeated rows). The
sample is the N rows of lowest rank, kept in input order. So:
- the same N, seed and input give the same rows on every machine and Python version (no
  random-number library whose stream could change), also after a resume;
- a larger N with the same seed keeps every row of the smaller sample (growing a sample
  reuses the verdicts already paid for);
- rows added to the input later do not reshuffle the rows already there.
For rows not crafted against the seed, SHA-256 ranks order them as a uniform random
permutation would; another seed gives an unrelated order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence, TypeVar

from ..protocol.constants import COL_IS_REJECTED, COL_RESPONSE
from ..protocol.verdict import refused_in

T = TypeVar("T")


def is_scored(row: dict[str, str], has_keyword_column: bool) -> bool:
    """A row the sample may hold: stage 4 gave it a verdict (when the input has the column),
    else it has a non-empty response."""
    if has_keyword_column:
        return refused_in(row.get(COL_IS_REJECTED, "")) is not None
    return bool(str(row.get(COL_RESPONSE, "")).strip())


def rank(seed: int, identity: str) -> str:
    return hashlib.sha256(f"{seed}\x00{identity}".encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Sample:
    size: int | None  # N asked for; None when not sampling
    seed: int | None
    population: int  # candidate (scored) rows
    chosen: list[int]  # indices into the candidates, in input order

    def as_info(self) -> dict[str, int | None]:
        return {"sample_size": self.size, "sample_seed": self.seed,
                "population_rows": self.population, "sampled_rows": len(self.chosen)}


def draw(identities: Sequence[str], size: int, seed: int) -> Sample:
    """The `size` candidates of lowest rank (all of them when size >= their number)."""
    order = sorted(range(len(identities)), key=lambda i: rank(seed, identities[i]))
    return Sample(size=size, seed=seed, population=len(identities), chosen=sorted(order[:size]))


def take(items: Sequence[T], sample: Sample) -> list[T]:
    return [items[i] for i in sample.chosen]


def stratified(identities: Sequence[str], strata: Sequence[str], size: int, seed: int) -> list[int]:
    """A seeded sample of `size` rows spread over strata (categories), as indices in input order.

    Each stratum gets its share of `size` in proportion to its rows (largest remainders),
    and at least one row while `size` covers every stratum; when it does not, the strata
    whose best-ranked row ranks lowest get one row each. Within a stratum the rows of lowest
    rank are taken, so the same identities, strata, size and seed give the same rows.
    """
    if len(identities) != len(strata):
        raise ValueError("stratified: one stratum per identity")
    if size >= len(identities):
        return list(range(len(identities)))
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    ranked = {s: sorted(rows, key=lambda i: rank(seed, identities[i])) for s, rows in groups.items()}
    if size < len(ranked):
        firsts = sorted(ranked, key=lambda s: rank(seed, identities[ranked[s][0]]))
        return sorted(ranked[s][0] for s in firsts[:size])
    quota = _allocate({s: len(rows) for s, rows in ranked.items()}, size)
    return sorted(i for s, rows in ranked.items() for i in rows[:quota[s]])


def _allocate(counts: dict[str, int], size: int) -> dict[str, int]:
    """One row per stratum, then the rest in proportion to the rows left (largest remainders),
    never more than a stratum holds. Assumes len(counts) <= size < sum(counts)."""
    quota = {s: 1 for s in counts}
    left = size - len(counts)
    while left > 0:
        room = {s: counts[s] - quota[s] for s in counts if counts[s] > quota[s]}
        total = sum(room.values())
        shares = {s: left * r / total for s, r in room.items()}
        whole = {s: min(int(v), room[s]) for s, v in shares.items()}
        given = sum(whole.values())
        if given == 0:  # every share below one row: the largest remainders take one each
            for s in sorted(room, key=lambda s: (-shares[s], s))[:left]:
                whole[s] = 1
            given = sum(whole.values())
        for s, k in whole.items():
            quota[s] += k
        left -= given
    return quota
