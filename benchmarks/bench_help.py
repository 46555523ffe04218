"""How long each command takes to print its --help: every stage script, build_datasets.py,
run_pipeline.sh, the `python -m` commands and every console script of pyproject.toml (the
list: orbench/testing/commands.py). Target: under 0.5 s each.

    python benchmarks/bench_help.py [--repeats 5] [--max_load 1.0] [--checkout DIR]

Each command runs as a subprocess, start to exit, --repeats times, interleaved (every command
once, then again), so that other load falls on all alike; the figure is the median. CPU time
(user + system of the child) is reported beside the wall time: on a busy machine it moves far
less. --checkout times another checkout's commands (e.g. main in a second worktree) with the
same Python, for a before/after.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, describe_machine, machine, median, run_timed, save_results, wait_for_quiet  # noqa: E402
from orbench.testing.commands import commands  # noqa: E402

TARGET_S = 0.5


def run(repeats: int = 5, max_load: float | None = None, checkout: Path = ROOT, log=print) -> dict:
    mach = machine()
    cmds = commands(checkout)
    log(f"--help of {len(cmds)} commands in {checkout}, {repeats} runs each, on {describe_machine(mach)}")
    runs: dict[str, list] = {name: [] for name in cmds}
    for rep in range(repeats):
        wait_for_quiet(max_load, log=log)
        for name, argv in cmds.items():
            runs[name].append(run_timed([*argv, "--help"], cwd=checkout).ok())
        log(f"  [{rep + 1}/{repeats}] done, load average {runs[name][-1].load1:.1f}")
    summary = {name: {"wall_s": median([t.wall_s for t in ts]), "cpu_s": median([t.cpu_s for t in ts]),
                      "load1": median([t.load1 for t in ts]), "met": median([t.wall_s for t in ts]) < TARGET_S}
               for name, ts in runs.items()}
    result = {"section": "help", "machine": mach, "checkout": str(checkout), "repeats": repeats,
              "target_s": TARGET_S, "summary": summary,
              "runs": {name: [{"wall_s": t.wall_s, "cpu_s": t.cpu_s, "load1": t.load1} for t in ts]
                       for name, ts in runs.items()}}
    save_results("help", result)
    return result


def markdown(result: dict) -> str:
    lines = [f"| command | --help wall s (median of {result['repeats']}) | CPU s | load average | < {TARGET_S} s |",
             "|---|---:|---:|---:|---|"]
    for name, s in result["summary"].items():
        lines.append(f"| `{name}` | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | {s['load1']:.1f} | "
                     f"{'met' if s['met'] else '**missed**'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5, help="runs per command; the median is reported (default 5)")
    p.add_argument("--max_load", type=float, default=None, help="before each round, wait until the 1-min load average is below this")
    p.add_argument("--checkout", type=Path, default=ROOT, help="the checkout whose commands are timed (default: this one)")
    args = p.parse_args(argv)
    print(markdown(run(args.repeats, args.max_load, args.checkout.resolve())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
