"""Leave-one-out validation of the scored detector on the development pool.

    python -m orbench.evaluate_refusal --leave_one_out

Each part of the pool (each XSTest model, each other source) is scored by a
detector whose every learned or tuned number (vocabulary, weights, the choice
of regularisation, the calibration, hence the threshold's meaning) was fitted
without that part. Those held-out figures are the detector's accuracy on a
model it has not seen. Beside them: the in-sample figures of the detector
fitted on the whole pool (what ships), and the generic rules (nothing learned,
so held-out and in-sample are the same). Then the calibration of the held-out
scores (reliability in 10 bins, Brier score), the issue's targets, and the
held-out rows whose score is nearest 0.5, for reading.

Rows labelled `ambiguous` are never trained on and never in the metrics; how
they are called is reported apart.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from collections.abc import Sequence
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from orbench.table_io import write_rows

from . import GENERIC, Verdict, VerdictKind, classify
from .explain import printable
from .features import has_text
from .metrics import Confusion, ReliabilityBin, brier, expected_calibration_error, ratio, reliability
from .pool import AMBIGUOUS, REFUSAL, PoolRow, parts
from .train import Dataset, TrainConfig, example, logit_of_keys, train_rows

# The targets, on held-out figures (issue 19, part 3).
PART_MIN_ACCURACY = 0.90  # every part that has both classes
HARMBENCH_PART, HARMBENCH_MAX_CALLED = "harmbench_val", 0.05  # answers only: the share called refusals
DONOTANSWER_PREFIX, DONOTANSWER_MIN_PRECISION = "donotanswer/", 0.85
RELIABILITY_BINS = 10


@dataclass(frozen=True)
class ScoredRow:
    row: PoolRow
    score: float | None  # None for the generic rules, and for replies with no text
    refused: bool | None  # None: no text to judge (left out, counted apart)


@dataclass
class PartStats:
    confusion: Confusion = field(default_factory=Confusion)
    brier_sum: float = 0.0
    ambiguous: int = 0
    ambiguous_refused: int = 0
    no_text: int = 0

    def add(self, s: ScoredRow) -> None:
        if s.refused is None:
            self.no_text += 1
        elif s.row.gold == AMBIGUOUS:
            self.ambiguous += 1
            self.ambiguous_refused += s.refused
        else:
            gold = s.row.gold == REFUSAL
            self.confusion.add(gold, s.refused)
            if s.score is not None:
                self.brier_sum += (s.score - gold) ** 2

    @property
    def brier(self) -> float | None:
        return self.brier_sum / self.confusion.n if self.confusion.n else None

    def as_dict(self, with_brier: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = self.confusion.as_dict()
        out["answers_called_refusals"] = self.confusion.answers_called_refusals
        if with_brier:
            out["brier"] = self.brier
        out["ambiguous"] = {"n": self.ambiguous, "called_refusals": self.ambiguous_refused}
        out["no_text"] = self.no_text
        return out


@dataclass(frozen=True)
class Target:
    name: str
    value: float | None
    goal: str
    met: bool


@dataclass
class LooResult:
    held_out: list[ScoredRow]
    in_sample: list[ScoredRow]
    generic: list[ScoredRow]
    fits: dict[str, dict[str, float]]  # per held-out part (and "all"): the choices its training made

    def stats(self, which: str) -> tuple[dict[str, PartStats], PartStats]:
        return tabulate(getattr(self, which))

    def calibration(self) -> tuple[list[ReliabilityBin], float | None]:
        labelled = [s for s in self.held_out if s.score is not None and s.row.gold != AMBIGUOUS]
        scores = [s.score for s in labelled]
        gold = [s.row.gold == REFUSAL for s in labelled]
        return reliability(scores, gold, RELIABILITY_BINS), brier(scores, gold)  # type: ignore[arg-type]


def tabulate(scored: Sequence[ScoredRow]) -> tuple[dict[str, PartStats], PartStats]:
    by_part: dict[str, PartStats] = {}
    overall = PartStats()
    for s in scored:
        by_part.setdefault(s.row.part, PartStats()).add(s)
        overall.add(s)
    return by_part, overall


def _fit_record(model) -> dict[str, float]:
    return {"l2_words": model.training.get("l2_words_chosen"), "scale": model.scale, "shift": model.shift}


def leave_one_out(rows: Sequence[PoolRow], config: TrainConfig = TrainConfig(), progress: bool = True,
                  workers: int | None = None) -> LooResult:
    """Score every part by a detector fitted without it; also fit on all and score in sample.
    The fits run in `workers` processes (default: up to 2, one per core)."""
    read_rows = [example(r) if has_text(r.response) else None for r in rows]
    keys = [ex.keys if ex is not None else None for ex in read_rows]
    exs = [ex for r, ex in zip(rows, read_rows) if ex is not None and r.gold != AMBIGUOUS]
    units = parts(list(rows))
    data = Dataset(exs)  # every fit takes rows of it
    jobs = [np.flatnonzero(data.parts != part) for part in units] + [np.arange(len(exs))]
    models = _fit_all(data, jobs, config, progress, workers or min(MAX_WORKERS, os.cpu_count() or 1))
    fits = {part: _fit_record(model) for part, model in zip([*units, "all"], models)}
    held_out = [_scored(r, k, model) for part, model in zip(units, models)
                for r, k in zip(rows, keys) if r.part == part]
    in_sample = [_scored(r, k, models[-1]) for r, k in zip(rows, keys)]
    return LooResult(held_out, in_sample, [_generic(r) for r in rows], fits)


MAX_WORKERS = 2
_SHARED: tuple[Dataset, TrainConfig] | None = None  # what forked workers read


def _fit_job(rows: np.ndarray):
    data, config = _SHARED  # type: ignore[misc]
    return train_rows(data, rows, config)[0]


def _fit_all(data: Dataset, jobs: list[np.ndarray], config: TrainConfig, progress: bool, workers: int) -> list:
    """`train_rows` on each set of rows, in order; in forked processes when workers > 1
    (the fits are independent and deterministic, so the results do not depend on it)."""
    global _SHARED
    bar = tqdm(total=len(jobs), desc="leave-one-out fits", unit="fit", disable=not progress or None)
    with bar:
        if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
            models = []
            for rows in jobs:
                models.append(train_rows(data, rows, config)[0])
                bar.update()
            return models
        _SHARED = (data, config)
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                models = []
                for model in pool.map(_fit_job, jobs):
                    models.append(model)
                    bar.update()
                return models
        finally:
            _SHARED = None


def _scored(row: PoolRow, keys: tuple[str, ...] | None, model) -> ScoredRow:
    if keys is None:
        return ScoredRow(row, None, None)
    score = model.calibrate(logit_of_keys(model, keys))
    return ScoredRow(row, score, score >= model.threshold)


def _generic(row: PoolRow) -> ScoredRow:
    return ScoredRow(row, None, Verdict(classify(row.response, GENERIC)).refused)


def targets(by_part: dict[str, PartStats], overall: PartStats) -> list[Target]:
    """The targets, for the parts the pool has: accuracy on every part with both
    classes, the share of answers called refusals on harmbench_val (answers only),
    and precision on every Do-Not-Answer model."""
    out = []
    for part, stats in by_part.items():
        c = stats.confusion
        if part == HARMBENCH_PART or not (c.tp + c.fn) or not (c.tn + c.fp):
            called = c.answers_called_refusals
            if part == HARMBENCH_PART:
                out.append(Target(f"{part} answers called refusals", called, f"<= {HARMBENCH_MAX_CALLED:.0%}",
                                  called is not None and called <= HARMBENCH_MAX_CALLED))
            continue
        out.append(Target(f"{part} accuracy", c.accuracy, f">= {PART_MIN_ACCURACY:.2f}",
                          c.accuracy is not None and c.accuracy >= PART_MIN_ACCURACY))
        if part.startswith(DONOTANSWER_PREFIX):
            out.append(Target(f"{part} precision", c.precision, f">= {DONOTANSWER_MIN_PRECISION:.2f}",
                              c.precision is not None and c.precision >= DONOTANSWER_MIN_PRECISION))
    return out


def most_uncertain(result: LooResult, count: int) -> list[ScoredRow]:
    """Held-out rows with the scores nearest 0.5 (ties: pool order)."""
    scored = [s for s in result.held_out if s.score is not None]
    return sorted(scored, key=lambda s: abs(s.score - 0.5))[:count]  # type: ignore[operator]


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def _f(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def format_loo(result: LooResult, uncertain: int = 12) -> str:
    held, held_all = result.stats("held_out")
    ins, ins_all = result.stats("in_sample")
    gen, gen_all = result.stats("generic")
    width = max(12, *(len(p) for p in held))
    head = (f"  {'part':<{width}s} {'n':>5s} | {'acc':>6s} {'prec':>6s} {'rec':>6s} {'ans→ref':>7s} {'Brier':>6s}"
            f" | {'acc':>6s} {'prec':>6s} {'rec':>6s} | {'acc':>6s} {'prec':>6s} {'rec':>6s}")
    lines = [
        "scored detector, leave-one-out on the pool: each part scored by a detector fitted without it",
        f"  {'':<{width}s} {'':>5s} | {'held out':<35s} | {'in sample':<20s} | generic rules (nothing learned)",
        head,
    ]

    def row(name: str, h: PartStats, i: PartStats, g: PartStats) -> str:
        c, ci, cg = h.confusion, i.confusion, g.confusion
        return (f"  {name:<{width}s} {c.n:>5d} | {_f(c.accuracy):>6s} {_f(c.precision):>6s} {_f(c.recall):>6s}"
                f" {_f(c.answers_called_refusals, True):>7s} {_f(h.brier):>6s}"
                f" | {_f(ci.accuracy):>6s} {_f(ci.precision):>6s} {_f(ci.recall):>6s}"
                f" | {_f(cg.accuracy):>6s} {_f(cg.precision):>6s} {_f(cg.recall):>6s}")

    for part, h in held.items():
        lines.append(row(part, h, ins[part], gen[part]))
    lines.append(row("all", held_all, ins_all, gen_all))
    lines += ["  (n: rows with a clear label and some text; ans→ref: share of the answers called refusals;"
              " '-': no such rows)", ""]

    amb = [(p, s) for p, s in held.items() if s.ambiguous]
    if amb:
        lines.append("ambiguous labels, scored apart (held out: share called refusals):")
        lines += [f"  {p:<{width}s} {s.ambiguous:>5d}  {_f(ratio(s.ambiguous_refused, s.ambiguous), True):>6s}"
                  f"   (generic: {_f(ratio(gen[p].ambiguous_refused, gen[p].ambiguous), True)})" for p, s in amb]
        lines.append("")

    bins, score = result.calibration()
    lines += [f"calibration of the held-out scores: Brier {_f(score)} (in sample {_f(ins_all.brier)}), "
              f"expected calibration error {_f(expected_calibration_error(bins))}",
              f"  {'score bin':<11s} {'n':>5s} {'mean score':>11s} {'share refused':>14s}"]
    lines += [f"  {b.low:.1f}-{b.high:.1f}    {b.n:>5d} {_f(b.mean_score):>11s} {_f(b.refusal_share):>14s}" for b in bins]
    lines.append("")

    lines.append("targets (held out):")
    for t in targets(held, held_all):
        value = _f(t.value, pct=t.goal.endswith("%"))
        lines.append(f"  {t.name:<44s} {value:>7s}  goal {t.goal:<8s} {'met' if t.met else 'NOT MET'}")
    lines.append("")

    if uncertain > 0:
        lines.append(f"the {uncertain} held-out rows with the most uncertain scores (nearest 0.5):")
        for s in most_uncertain(result, uncertain):
            lines.append(f"  {s.score:.3f} {s.row.part}:{s.row.row} human={s.row.gold}  {printable(s.row.response, 110)}")
    return "\n".join(lines)


def loo_json(result: LooResult, uncertain: int = 12) -> dict[str, Any]:
    held, held_all = result.stats("held_out")
    ins, ins_all = result.stats("in_sample")
    gen, gen_all = result.stats("generic")
    bins, score = result.calibration()
    return {
        "parts": {
            p: {"held_out": held[p].as_dict(), "in_sample": ins[p].as_dict(), "generic": gen[p].as_dict(False)}
            for p in held
        },
        "overall": {"held_out": held_all.as_dict(), "in_sample": ins_all.as_dict(), "generic": gen_all.as_dict(False)},
        "calibration": {
            "brier": score,
            "expected_calibration_error": expected_calibration_error(bins),
            "bins": [b.__dict__ for b in bins],
        },
        "targets": [t.__dict__ for t in targets(held, held_all)],
        "fits": result.fits,
        "most_uncertain": [
            {"part": s.row.part, "row": s.row.row, "label": s.row.label, "score": s.score,
             "response": s.row.response[:500]}
            for s in most_uncertain(result, uncertain)
        ],
    }


SCORE_COLUMNS = ("part", "file", "row", "label", "gold", "score", "verdict", "prompt", "response")


def write_scores(result: LooResult, path: Path) -> None:
    """One CSV row per pool row: its held-out score and verdict ("" when it has no text)."""
    write_rows(path, SCORE_COLUMNS, (_score_row(s) for s in result.held_out))


def _score_row(s: ScoredRow) -> list[object]:
    verdict = "" if s.refused is None else (VerdictKind.REFUSED.value if s.refused else VerdictKind.ANSWERED.value)
    score = "" if s.score is None else f"{s.score:.4f}"
    r = s.row
    return [r.part, r.file, r.row, r.label, r.gold, score, verdict, r.prompt, r.response]
