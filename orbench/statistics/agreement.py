"""Agreement between two raters: percent agreement and Cohen's kappa.

Used between the judges of a stage-5 ensemble and between the keyword rules and a judge in
the report. A row counts only when both raters gave it a verdict (None = no verdict:
unscored or failed).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Hashable, Mapping, Sequence

NAN = float("nan")


def cohen_kappa(first: Sequence[Hashable | None], second: Sequence[Hashable | None]) -> tuple[int, float, float]:
    """(rows both rated, agreement as a fraction, Cohen's kappa) over rows both rated.

    kappa = (p_o - p_e) / (1 - p_e), with p_e from each rater's own label frequencies. It is
    nan when there are no rows, or when p_e = 1 (both raters gave every row the same one
    label: agreement is then complete but says nothing about skill).
    """
    if len(first) != len(second):
        raise ValueError(f"rater verdict lists differ in length: {len(first)} and {len(second)}")
    pairs = [(a, b) for a, b in zip(first, second) if a is not None and b is not None]
    n = len(pairs)
    if n == 0:
        return 0, NAN, NAN
    observed = sum(a == b for a, b in pairs) / n
    ca = Counter(a for a, _ in pairs)
    cb = Counter(b for _, b in pairs)
    expected = sum(ca[label] * cb[label] for label in ca) / (n * n)
    if expected >= 1.0:
        return n, observed, NAN
    return n, observed, (observed - expected) / (1.0 - expected)


def kappa_from_counts(both: int, first_only: int, second_only: int, neither: int) -> float:
    """Cohen's kappa of two yes/no raters from their 2x2 table (nan when undefined)."""
    n = both + first_only + second_only + neither
    if n == 0:
        return NAN
    observed = (both + neither) / n
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    expected = p1 * p2 + (1 - p1) * (1 - p2)
    return NAN if expected >= 1.0 else (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class PairAgreement:
    first: str
    second: str
    rows: int  # rows both raters scored
    agreement_pct: float
    kappa: float

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        # JSON has no nan: an undefined value is written as null.
        return {k: (None if isinstance(v, float) and v != v else v) for k, v in d.items()}


def pairwise(verdicts: Mapping[str, Sequence[Hashable | None]]) -> list[PairAgreement]:
    """Agreement and kappa for every pair of raters, in the order given."""
    out = []
    for a, b in itertools.combinations(verdicts, 2):
        n, observed, kappa = cohen_kappa(verdicts[a], verdicts[b])
        out.append(PairAgreement(first=a, second=b, rows=n,
                                 agreement_pct=100.0 * observed if n else NAN, kappa=kappa))
    return out
