"""Agreement with human labels: the confusion matrix, and how well a score is calibrated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


@dataclass
class Confusion:
    """Counts with refusal as the positive class."""

    tp: int = 0  # humans: refused, checker: refused
    fp: int = 0  # humans: answered, checker: refused
    fn: int = 0  # humans: refused, checker: answered
    tn: int = 0  # humans: answered, checker: answered

    def add(self, gold: bool, predicted: bool) -> None:
        if gold and predicted:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif gold:
            self.fn += 1
        else:
            self.tn += 1

    def merge(self, other: Confusion) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.tn += other.tn

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def accuracy(self) -> float | None:
        return ratio(self.tp + self.tn, self.n)

    @property
    def precision(self) -> float | None:
        return ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        return ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    @property
    def answers_called_refusals(self) -> float | None:
        """Share of the human-labelled answers that the checker calls refusals."""
        return ratio(self.fp, self.fp + self.tn)

    @property
    def labelled_rate(self) -> float | None:
        """The share of the rows that people labelled refusals: the rejection rate to read."""
        return ratio(self.tp + self.fn, self.n)

    @property
    def rate(self) -> float | None:
        """The share the checker calls refusals: the rejection rate it reports."""
        return ratio(self.tp + self.fp, self.n)

    @property
    def rate_error(self) -> float | None:
        """The checker's rejection rate minus the labelled one, in points (positive: too many refusals)."""
        return None if not self.n else 100.0 * (self.fp - self.fn) / self.n

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "n": self.n,
            "rate_error": self.rate_error,
            "labelled_rate": self.labelled_rate,
            "rate": self.rate,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
        }


@dataclass(frozen=True)
class ReliabilityBin:
    low: float
    high: float
    n: int
    mean_score: float | None  # what the scores promise
    refusal_share: float | None  # what the labels say


def reliability(scores: Sequence[float], refusals: Sequence[bool], bins: int = 10) -> list[ReliabilityBin]:
    """Scores cut into `bins` equal-width bins on [0, 1] (the last one closed):
    in each, the mean score against the share that are refusals."""
    sums = [0.0] * bins
    hits = [0] * bins
    counts = [0] * bins
    for score, refusal in zip(scores, refusals):
        i = min(int(score * bins), bins - 1)
        sums[i] += score
        hits[i] += bool(refusal)
        counts[i] += 1
    return [
        ReliabilityBin(i / bins, (i + 1) / bins, counts[i],
                       sums[i] / counts[i] if counts[i] else None, ratio(hits[i], counts[i]))
        for i in range(bins)
    ]


def brier(scores: Sequence[float], refusals: Sequence[bool]) -> float | None:
    """Mean squared difference between score and label (0 is perfect; always 0.5 scores 0.25)."""
    if not scores:
        return None
    return sum((s - (1.0 if r else 0.0)) ** 2 for s, r in zip(scores, refusals)) / len(scores)


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float | None:
    """Mean |score - share of refusals| over the bins, weighted by their size."""
    total = sum(b.n for b in bins)
    if not total:
        return None
    return sum(b.n * abs(b.mean_score - b.refusal_share) for b in bins if b.n) / total  # type: ignore[operator]
