"""Coverage and width of the corrected rate's 95% interval, by seeded simulation.

    python -m orbench.statistics.coverage                      # every table of docs/statistics/
    python -m orbench.statistics.coverage --sections sources   # one table (coverage rounds sources calls)

Populations of 2,000 rows are built from the development pool's parts with held-out scores
(orbench.statistics.simulation). For each case and judged-sample size, every run draws a population and
a sample, and the table gives the share of runs whose interval holds the truth and the mean
half-width in points, for:
- today: orbench.statistics.estimators.corrected_interval (keyword verdicts; the keyword rate's own
  uncertainty added as if the rows were a draw from an infinite population);
- middle: the same estimand as the new one (the judge's rate over these N rows) and the
  same interval, but strata = the keyword verdict only: what the estimand alone gains;
- new: post-stratified on the score (orbench.statistics.stratified), uniform sample;
- new, score design: the same, rows drawn with --design score (orbench.statistics.design).
Deterministic: the same arguments print the same tables.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from orbench.statistics.design import SCORE, UNIFORM
from orbench.statistics.planning import calls_for, calls_for_keyword, extension_size, pilot_size
from orbench.statistics.simulation import (
    DEFAULT_CACHE, Case, Cell, Part, cell, design_draw, held_out_parts, new_interval, populations,
    score_strata, today_interval, verdict_interval,
)
from orbench.statistics.stratified import strata_interval

SIZES = (50, 100, 300, 1000)
CASES = (
    Case("refuses 2% (XSTest mistralinstruct rows)", "xstest/mistralinstruct", rate=0.02),
    Case("refuses 2%, weak detector (rbr_gold rows)", "rbr_gold", rate=0.02),
    Case("never refuses (harmbench_val: answers only)", "harmbench_val"),
    Case("refuses 98% (XSTest llama2orig rows)", "xstest/llama2orig", rate=0.98),
    Case("refuses 98%, weak detector (rbr_gold rows)", "rbr_gold", rate=0.98),
    Case("detector badly wrong (rbr_gold, 60% refuse, 70% of them missed)", "rbr_gold", rate=0.6, missed_share=0.7),
    Case("score carries nothing (mistralguard, scores shuffled)", "xstest/mistralguard", shuffle=True),
)
COLUMNS = ("today", "middle", "new", "new, score design")
BY_CASE_NAME = {c.name.split(" (")[0]: c for c in CASES}  # short names, as the tests use them


def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng([seed, *keys])


def compare(part: Part, case: Case, size: int, runs: int, seed: int) -> dict[str, Cell]:
    """The four columns for one case and size, on the same populations and random numbers."""
    rng = _rng(seed, hash_name(case.name), size)
    scores, refused = populations(part, case, runs, rng)
    truth = refused.mean(axis=1)
    u = rng.random(scores.shape)
    uniform = design_draw(scores, u, size, UNIFORM)
    by_score = design_draw(scores, u, size, SCORE)
    judged_u, judged_s = uniform.judged.sum(axis=1), by_score.judged.sum(axis=1)
    return {
        "today": cell(truth, today_interval(scores, refused, uniform), judged_u),
        "middle": cell(truth, verdict_interval(scores, refused, uniform), judged_u),
        "new": cell(truth, new_interval(scores, refused, uniform), judged_u),
        "new, score design": cell(truth, new_interval(scores, refused, by_score), judged_s),
    }


def hash_name(name: str) -> int:
    """A stable number per case name (Python's hash() changes between processes)."""
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) % (1 << 31)


@dataclass(frozen=True)
class Rounds:
    cell: Cell
    reached: float  # share of runs that ended at or under the target
    pilot_only: float  # share of runs that stopped after the pilot


def two_rounds(part: Part, case: Case, design: str, target_pts: float, maximum: int, runs: int,
               seed: int) -> Rounds:
    """Stage 5's --target_halfwidth path: a pilot, one extension from its own variance."""
    rng = _rng(seed, hash_name(case.name), 7, maximum)
    scores, refused = populations(part, case, runs, rng)
    truth = refused.mean(axis=1)
    u = rng.random(scores.shape)
    target = target_pts / 100.0
    pilot = pilot_size(maximum)
    first = score_strata(scores, refused, design_draw(scores, u, pilot, design))
    _, low, high = strata_interval(first)
    needed = calls_for(first, target, design)
    final = np.array([pilot if (h - lo) / 2 <= target else extension_size(float(nd), pilot, maximum)
                      for lo, h, nd in zip(low, high, needed)])
    second = design_draw(scores, u, final, design)
    interval = new_interval(scores, refused, second)
    reached = (interval[2] - interval[1]) / 2 <= target + 1e-12
    return Rounds(cell(truth, interval, second.judged.sum(axis=1)), float(np.mean(reached)),
                  float(np.mean(final == pilot)))


def natural(part_name: str) -> Case:
    return Case(part_name, part_name)


def median_calls(part: Part, part_name: str, size: int, runs: int, seed: int) -> dict[str, list[float]]:
    """Median judge calls for ±1/±2/±3 points, as each estimator plans them from a sample."""
    case = natural(part_name)
    rng = _rng(seed, hash_name(part_name), 11, size)
    scores, refused = populations(part, case, runs, rng)
    u = rng.random(scores.shape)
    d = design_draw(scores, u, size, UNIFORM)
    strata = score_strata(scores, refused, d)
    keyword, y = scores >= 0.5, refused == 1
    counts = (keyword.sum(axis=1), scores.shape[1], (d.judged & y & ~keyword).sum(axis=1),
              (d.judged & ~y & keyword).sum(axis=1), d.judged.sum(axis=1))
    out: dict[str, list[float]] = {"today": [], "new": []}
    for pts in (1, 2, 3):
        out["today"].append(float(np.nanmedian(calls_for_keyword(*counts, pts / 100.0)))
                            if np.any(~np.isnan(calls_for_keyword(*counts, pts / 100.0))) else math.nan)
        out["new"].append(float(np.median(calls_for(strata, pts / 100.0))))
    return out


# ------------------------------------------------------------------ tables


def coverage_table(parts: dict[str, Part], runs: int, seed: int, sizes: Sequence[int] = SIZES) -> str:
    lines = ["| case | judged rows | " + " | ".join(COLUMNS) + " |", "|---|---:|" + "---|" * len(COLUMNS)]
    for case in CASES:
        if case.part not in parts:
            continue
        for n in sizes:
            cells = compare(parts[case.part], case, n, runs, seed)
            lines.append(f"| {case.name} | {n:,} | " + " | ".join(cells[c].text() for c in COLUMNS) + " |")
    return "\n".join(lines)


def rounds_table(parts: dict[str, Part], runs: int, seed: int, target_pts: float = 3.0,
                 maximum: int = 1000) -> str:
    lines = ["| case | design | coverage ±half-width | mean judged rows | runs at the target | stopped after the pilot |",
             "|---|---|---|---:|---:|---:|"]
    for case in CASES:
        if case.part not in parts:
            continue
        for design in (UNIFORM, SCORE):
            r = two_rounds(parts[case.part], case, design, target_pts, maximum, runs, seed)
            lines.append(f"| {case.name} | {design} | {r.cell.text()} | {r.cell.judged:.0f} | "
                         f"{100 * r.reached:.0f}% | {100 * r.pilot_only:.0f}% |")
    return "\n".join(lines)


def sources_table(parts: dict[str, Part], runs: int, seed: int, size: int = 300) -> str:
    lines = ["| source (as it comes, N = 2,000) | refuses | keyword rate | " + " | ".join(COLUMNS) + " |",
             "|---|---:|---:|" + "---|" * len(COLUMNS)]
    for name, part in parts.items():
        cells = compare(part, natural(name), size, runs, seed)
        rate, keyword = 100 * part.refused.mean(), 100 * np.mean(part.scores >= 0.5)
        lines.append(f"| {name} | {rate:.1f}% | {keyword:.1f}% | " + " | ".join(cells[c].text() for c in COLUMNS) + " |")
    return "\n".join(lines)


def calls_table(parts: dict[str, Part], runs: int, seed: int, size: int = 300) -> str:
    def fmt(v: float) -> str:
        return "never" if math.isnan(v) else f"{v:,.0f}"

    lines = ["| source | today: ±1 / ±2 / ±3 | new: ±1 / ±2 / ±3 |", "|---|---|---|"]
    for name, part in parts.items():
        calls = median_calls(part, name, size, runs, seed)
        lines.append(f"| {name} | " + " | ".join(" / ".join(fmt(v) for v in calls[k]) for k in ("today", "new")) + " |")
    return "\n".join(lines)


SECTIONS = ("coverage", "rounds", "sources", "calls")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orbench.statistics.coverage", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000, help="simulated runs per cell (default 2,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated: {' '.join(SECTIONS)}")
    ap.add_argument("--pool_dir", default=None, help="the development pool (default ../shared/data)")
    ap.add_argument("--cache_dir", default=str(DEFAULT_CACHE), help="where the held-out scores are cached")
    args = ap.parse_args(argv)
    wanted = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SECTIONS))
    if unknown:
        print(f"orbench.statistics.coverage: error: unknown section(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    from orbench.errors import UserError

    try:
        parts = held_out_parts(args.pool_dir, args.cache_dir, progress=True)
    except UserError as exc:
        print(f"orbench.statistics.coverage: error: {exc}", file=sys.stderr)
        return 2
    tables = {"coverage": coverage_table, "rounds": rounds_table, "sources": sources_table, "calls": calls_table}
    for name in wanted:
        print(f"## {name} ({args.runs} runs per cell, seed {args.seed})\n")
        print(tables[name](parts, args.runs, args.seed), flush=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
