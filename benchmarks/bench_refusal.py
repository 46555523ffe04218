"""How fast the refusal checkers are: seconds to classify 80,000 responses.

    python benchmarks/bench_refusal.py
    python benchmarks/bench_refusal.py --input results.csv --column response --count 80000

By default the responses are XSTest's 2,250 human-labelled completions
(../shared/data/xstest/model_completions, beside the repository), repeated in
order until there are `--count` of them. They mix long answers and refusals
from five models, about half of each, which is harder than a typical stage-4
run, where most responses are answers. `--input` times any CSV instead.

Each checker runs over the whole list `--repeat` times; the best and the median
wall-clock time and the best CPU time of the process are printed, with the
machine and its load average. On a busy machine the CPU time is the steadier
figure: it leaves out the time other processes held the cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orbench.refusal import FAMILIES, GENERIC, classify  # noqa: E402

DEFAULT_INPUT = ROOT.parent / "shared" / "data" / "xstest" / "model_completions"


def load_responses(source: Path, column: str | None) -> list[str]:
    files = sorted(source.glob("*.csv")) if source.is_dir() else [source]
    if not files:
        raise SystemExit(f"error: no CSV files at {source}")
    responses: list[str] = []
    for path in files:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        name = column or next((c for c in ("completion", "response") if c in frame.columns), None)
        if name is None or name not in frame.columns:
            raise SystemExit(f"error: {path} has no response column; use --column")
        responses.extend(frame[name].tolist())
    return responses


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def time_checker(responses: list[str], family: str, repeat: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds of each run over all responses."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        for response in responses:
            classify(response, family)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT, help="a CSV file or a folder of them")
    parser.add_argument("--column", default=None, help="response column (default: completion, else response)")
    parser.add_argument("--count", type=int, default=80_000, help="number of responses to classify")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per checker")
    parser.add_argument("--checkers", default=",".join(FAMILIES), help="comma-separated checkers to time")
    args = parser.parse_args(argv)

    if not args.input.exists():
        raise SystemExit(f"error: {args.input} not found; pass --input")
    base = load_responses(args.input, args.column)
    responses = (base * (args.count // len(base) + 1))[: args.count]

    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.machine()}")
    print(f"python {platform.python_version()}; one process, one thread")
    print(f"responses: {len(responses):,} ({len(base):,} distinct from {args.input})")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'checker':10s} {'best s':>8s} {'median s':>9s} {'best cpu s':>11s} {'us/response':>12s}")
    for family in args.checkers.split(","):
        wall, cpu = time_checker(responses, family, args.repeat)
        best = min(wall)
        print(
            f"{family:10s} {best:8.3f} {statistics.median(wall):9.3f} {min(cpu):11.3f}"
            f" {best / len(responses) * 1e6:12.1f}"
        )
    if GENERIC in args.checkers.split(","):
        print("target for generic: at most 1 s for 80,000 responses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
