"""How wide the corrected rate's 95% interval is, by judged-sample size, and how often it holds.

    python benchmarks/interval_widths.py                 # the table in docs/statistics/planning.md
    python benchmarks/interval_widths.py --population 1319 --runs 5000

For each kind of keyword detector and each sample size, seeded simulations (numpy, no model
calls) draw a model's rows and a uniform judged sample from them, compute the corrected
rate's interval (orbench.statistics.estimators.corrected_interval) and print the mean width in
percentage points and the share of runs whose interval holds the true rate. Deterministic:
the same arguments print the same table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orbench.statistics.estimators import corrected_interval, simulate_counts  # noqa: E402

# name: (judge-refusal rate p, share of refusals the keyword rules catch, share of answers they flag)
DETECTORS = {
    "nearly right (misses 1%, flags 0.5%)": (0.30, 0.99, 0.005),
    "misses 10%, flags 2%": (0.30, 0.90, 0.02),
    "misses half (the issue's case)": (0.70, 0.50, 0.05),
}
SIZES = (50, 100, 200, 500, 1000, 2000)


def table(population: int, runs: int, seed: int) -> str:
    head = "| judged rows | " + " | ".join(DETECTORS) + " |"
    lines = [head, "|" + " --- |" * (len(DETECTORS) + 1)]
    for n in SIZES:
        if n > population:
            continue
        cells = []
        for i, (p, sens, fa) in enumerate(DETECTORS.values()):
            pop, _, missed, false = simulate_counts(p, sens, fa, n, population, runs, seed + 1000 * i + n)
            _, low, high = corrected_interval(pop[:, 0] + pop[:, 2], population, missed, false, n)
            cover = float(np.mean((low <= p) & (p <= high)))
            cells.append(f"±{50 * float(np.mean(high - low)):.1f} ({100 * cover:.0f}%)")
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--population", type=int, default=80_000, help="scored rows per model and set (default 80,000)")
    ap.add_argument("--runs", type=int, default=2000, help="simulated runs per cell (default 2,000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"Half-width of the corrected rate's 95% interval, percentage points (mean over {args.runs:,} "
          f"seeded runs), with the share of runs whose interval holds the true rate; "
          f"{args.population:,} scored rows.\n")
    print(table(args.population, args.runs, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
