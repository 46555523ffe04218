"""Run the benchmarks behind docs/benchmarks.md and print their tables.

    python benchmarks/run_all.py                          # every section (about an hour on 2 cores)
    python benchmarks/run_all.py --section stage4         # one section (repeatable)
    python benchmarks/run_all.py --report                 # print the tables from saved results

Sections:
  stage4    stage 4 at concurrency 1, 16, 64 vs the sequential loop and bare AsyncOpenAI
  stage4_whole  stage 4 as a whole process, 4,000 rows at 64, vs the bare loop's process (issue 26)
  stage3    the same for stage 3 with a 3-moderator ensemble (and with one moderator)
  stage5    the same for stage 5
  cached    stage 4 over 80,000 rows from a warm cache; re-run of a complete output
  refusal   refusal detection (`scored`, `generic`, the family rules) over 80,000 responses (benchmarks/bench_refusal.py)
  local     the embedded model: tokens/s through stage 4 vs straight to llama.cpp
  pipeline  wall time of ./run_pipeline.sh (the README's main command) in a fresh clone, per step (bench_demo.py)
  help      --help of every command (benchmarks/bench_help.py)

Results go to benchmarks/results/{section}.json (git-ignored), with the machine they ran on.
Run from the repository root with the project's Python (e.g. /work/venv/bin/python).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_cached, bench_demo, bench_help, bench_local, bench_stages  # noqa: E402
from benchmarks.common import PYTHON, RESULTS_DIR, describe_machine, machine, run_timed, save_results, wait_for_quiet  # noqa: E402

SECTIONS = ("stage4", "stage4_whole", "stage3", "stage5", "cached", "refusal", "local", "pipeline", "help")
REFUSAL_TARGET_S = 1.0  # generic
SCORED_TARGET_S = 2.0  # scored, stage 4's default


def run_refusal(repeats: int, max_load: float | None) -> dict:
    """bench_refusal.py belongs to the refusal work; we run it and keep its table."""
    wait_for_quiet(max_load)
    mach = machine()
    argv = [PYTHON, "benchmarks/bench_refusal.py", "--count", "80000", "--repeat", str(max(repeats, 5))]
    t = run_timed(argv).ok()
    times: dict[str, dict[str, float]] = {}
    columns: list[str] = []
    for line in t.stdout.splitlines():
        if line.startswith("checker"):  # the table's header names its columns
            columns = [c.strip().replace(" ", "_").replace("/", "_per_") for c in re.split(r"\s{2,}", line.strip())[1:]]
        elif columns and re.match(r"^\S+(\s+[\d.]+)+$", line.strip()):
            name, *values = line.split()
            times[name] = dict(zip(columns, map(float, values)))
    generic = times.get("generic", {})
    scored = times.get("scored", {})
    result = {"section": "refusal", "machine": mach, "command": "python benchmarks/bench_refusal.py --count 80000 "
              f"--repeat {max(repeats, 5)}", "load1": t.load1, "output": t.stdout, "checkers": times,
              "summary": {"generic_median_s": generic.get("median_s"), "generic_best_s": generic.get("best_s"),
                          "target_s": REFUSAL_TARGET_S, "met": generic.get("median_s", 1e9) <= REFUSAL_TARGET_S,
                          "scored_median_s": scored.get("median_s"), "scored_target_s": SCORED_TARGET_S,
                          "scored_met": scored.get("median_s", 1e9) <= SCORED_TARGET_S}}
    if not generic:
        raise RuntimeError(f"no 'generic' row in the output of {' '.join(argv)}:\n{t.stdout}")
    save_results("refusal", result)
    return result


def report(section: str) -> str:
    path = RESULTS_DIR / f"{section}.json"
    if not path.exists():
        return f"## {section}\n(no results yet: python benchmarks/run_all.py --section {section})\n"
    r = json.loads(path.read_text())
    head = (f"## {section}\nmachine: {describe_machine(r['machine'])}; {r['machine']['date']}; "
            f"code {r['machine'].get('commit', '?')}\n")
    if section == "stage4_whole":
        return head + bench_stages.markdown_whole(r) + f"\nmedian of {r['repeats']} runs, median load average " \
                      f"{r.get('median_load1', float('nan')):.1f}\n"
    if section == "help":
        return head + bench_help.markdown(r) + "\n"
    if section.startswith("stage"):
        concurrencies = [int(k[1:]) for k in r["summary"] if k.startswith("c") and k[1:].isdigit()]
        r["summary"] = bench_stages.summarize(r["runs"], concurrencies, section[-1])  # figures added since the run
        s4 = r["summary"].get("c64", {})
        extra = (f"\nmedian of {r['repeats']} runs; {r['rows']} rows at concurrency > 1, {r['rows_at_1']} at 1 and "
                 f"for the sequential loop; latency {r['latency_s'] * 1000:.0f} ms; median load average "
                 f"{r.get('median_load1', float('nan')):.1f}\n")
        if section == "stage4" and s4:
            extra += f"stage / sequential at 64: {s4['stage_vs_sequential']:.1f}x (target >= 40x: " \
                     f"{'met' if s4['stage_vs_sequential'] >= 40 else 'MISSED'})\n"
        return head + bench_stages.markdown(r) + extra
    if section == "cached":
        return head + bench_cached.markdown(r) + f"\nmedian of {r['repeats']} runs\n"
    if section == "local":
        return head + bench_local.markdown_tokens(r) + f"\nmedian of {r['repeats']} runs, max_tokens {r['max_tokens']}\n"
    if section == "pipeline":
        walls = ", ".join(f"{w:.0f}" for w in r.get("pipeline_walls_s", []))
        return (head + f"./run_pipeline.sh in a fresh clone (benchmarks/bench_demo.py --venv, a cold response cache): "
                f"median {r['pipeline_wall_s']:.0f} s of {r['repeats']} run(s) ({walls} s), exit {r['returncode']}; "
                f"the run nearest the median:\n\n" + bench_demo.markdown(r) + "\n")
    if section == "refusal":
        s = r["summary"]
        scored = (f"; scored: median {s['scored_median_s']} s (target <= {s['scored_target_s']} s: "
                  f"{'met' if s['scored_met'] else 'MISSED'})" if s.get("scored_median_s") is not None else "")
        return head + f"```\n{r['output'].strip()}\n```\ngeneric: median {s['generic_median_s']} s " \
                      f"(target <= {s['target_s']} s: {'met' if s['met'] else 'MISSED'}){scored}\n"
    return head


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--section", action="append", choices=SECTIONS, help="run only this section (repeatable)")
    p.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    p.add_argument("--max_load", type=float, default=None,
                   help="before each repeat, wait until the 1-minute load average is below this (a shared machine)")
    p.add_argument("--report", action="store_true", help="only print the tables from benchmarks/results/")
    args = p.parse_args(argv)
    sections = args.section or list(SECTIONS)
    if not args.report:
        for section in sections:
            print(f"\n### running {section}", flush=True)
            if section == "stage4_whole":
                bench_stages.run("4", repeats=args.repeats, max_load=args.max_load, concurrencies=(64,),
                                 rows=bench_stages.WHOLE_ROWS, sequential_rows=0, save_as="stage4_whole")
            elif section == "help":
                bench_help.run(repeats=max(args.repeats, 5), max_load=args.max_load)
            elif section.startswith("stage"):
                bench_stages.run(section[-1], repeats=args.repeats, max_load=args.max_load)
            elif section == "cached":
                bench_cached.run(repeats=args.repeats, max_load=args.max_load)
            elif section == "refusal":
                run_refusal(args.repeats, args.max_load)
            elif section == "local":
                bench_local.run_tokens(repeats=args.repeats, max_load=args.max_load)
            elif section == "pipeline":
                bench_demo.run(venv=Path(sys.executable).parents[1], repeats=args.repeats, max_load=args.max_load,
                               section="pipeline")
    print()
    for section in sections:
        print(report(section))
    return 0


if __name__ == "__main__":
    sys.exit(main())
