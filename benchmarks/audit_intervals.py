"""How often the judge audit's 95% intervals hold the truth, and how wide they are.

    python benchmarks/audit_intervals.py                 # the table in docs/statistics/judge-audit.md
    python benchmarks/audit_intervals.py --runs 10000 --plain

For each kind of judge and each audit size, seeded simulations (numpy, no model calls) draw
audits of that many rows (half human refusals, half answers), compute the four figures'
intervals as stage 5 does (orbench.judge_audit.intervals) and print, per figure, the share of
runs whose interval holds the true value and the mean half-width in points (kappa: in
hundredths). `--plain` swaps in the Wilson interval without continuity correction, to show
where it falls short. Deterministic: the same arguments print the same table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orbench.statistics.estimators import wilson_bounds  # noqa: E402
from orbench.judge_audit.intervals import figure_bounds, simulate_audits, truths  # noqa: E402

# name: (recall, false-refusal rate, unscored share of refusals, of answers)
JUDGES = {
    "nearly perfect (99% / 1%)": (0.99, 0.01, 0.0, 0.0),
    "good (92% / 6%)": (0.92, 0.06, 0.0, 0.0),
    "at the threshold (85% / 25%, kappa 0.6)": (0.85, 0.25, 0.0, 0.0),
    "good, unscored 30% of refusals": (0.90, 0.10, 0.3, 0.05),
    "calls nearly all refusals (98% / 90%)": (0.98, 0.90, 0.05, 0.05),
    "rarely says refusal (10% / 2%)": (0.10, 0.02, 0.0, 0.0),
    "coin (50% / 50%)": (0.50, 0.50, 0.0, 0.0),
}
SIZES = (20, 50, 100, 200)
FIGURES = ("agreement", "kappa", "precision", "recall")


def plain_bounds(c: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The same figures with plain Wilson bounds (MOVER for kappa), for comparison."""
    n1, n0 = c["tp"] + c["fn"], c["fp"] + c["tn"]
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p0 = c["tp"] / n1, c["fp"] / n0
    l1, u1 = wilson_bounds(c["tp"], n1)
    l0, u0 = wilson_bounds(c["fp"], n0)
    d = p1 - p0
    kappa = (d - np.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2), d + np.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2))
    return {"agreement": wilson_bounds(c["tp"] + c["tn"], n1 + n0), "kappa": kappa,
            "precision": wilson_bounds(c["tp"], c["tp"] + c["fp"]), "recall": wilson_bounds(c["tp"], n1)}


def coverage(judge: tuple[float, float, float, float], size: int, runs: int, seed: int,
             plain: bool = False) -> dict[str, tuple[float, float]]:
    """figure -> (share of runs whose interval holds the truth, mean half-width); runs where
    a figure is undefined (no scored row in its denominator) are left out of its share."""
    recall, false_refusal, u1, u0 = judge
    counts = simulate_audits(recall, false_refusal, size, runs, seed, (u1, u0))
    truth = truths(recall, false_refusal, (u1, u0))
    bounds = (plain_bounds if plain else figure_bounds)(counts)
    out = {}
    for fig in FIGURES:
        low, high = bounds[fig]
        ok = ~np.isnan(low) & ~np.isnan(high)
        held = (low[ok] <= truth[fig] + 1e-12) & (truth[fig] - 1e-12 <= high[ok])
        out[fig] = (float(np.mean(held)), float(np.mean(high[ok] - low[ok])) / 2)
    return out


def table(runs: int, seed: int, plain: bool) -> str:
    head = "| judge | rows | " + " | ".join(FIGURES) + " |"
    lines = [head, "|" + " --- |" * (len(FIGURES) + 2)]
    for i, (name, judge) in enumerate(JUDGES.items()):
        for size in SIZES:
            res = coverage(judge, size, runs, seed + 1000 * i + size, plain)
            cells = [f"{100 * c:.0f}% ±{100 * w:.0f}" for c, w in (res[f] for f in FIGURES)]
            lines.append(f"| {name} | {size} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=4000, help="simulated audits per cell (default 4,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plain", action="store_true", help="plain Wilson bounds instead (to compare)")
    args = ap.parse_args(argv)
    kind = "plain Wilson" if args.plain else "Wilson with continuity correction; kappa: Newcombe's MOVER"
    print(f"Share of {args.runs:,} seeded audits whose 95% interval ({kind}) holds the true value, and the "
          f"mean half-width (points; kappa in hundredths). Judge: (recall / false-refusal rate).\n")
    print(table(args.runs, args.seed, args.plain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
