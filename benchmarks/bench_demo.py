"""The README's main command, timed as a new user meets it: a fresh clone, then
`python3 -m venv .venv && .venv/bin/pip install -e . && ./run_pipeline.sh`.

    python benchmarks/bench_demo.py                           # clone this repository, install, run the demo
    python benchmarks/bench_demo.py --venv .venv              # reuse a venv: time ./run_pipeline.sh alone
    python benchmarks/bench_demo.py --pip_cache_dir $(mktemp -d)   # a cold pip cache (llama-cpp-python is built)
    python benchmarks/bench_demo.py --repeats 3 --max_load 1.5     # median of 3, each started on a quiet machine

Each run clones the repository (`git clone REPO`: its committed HEAD, not uncommitted edits)
into a scratch folder and runs there with a cold response cache (a new, empty
ORBENCH_CACHE_DIR) and its own embedded model server, so nothing is reused from an earlier
run. With --venv, that venv's Python runs the pipeline (PYTHON=...; the clone's scripts import
the clone's code) and nothing is installed; otherwise the clone gets its own .venv, with pip's
cache as it is on this machine (warm, unless --pip_cache_dir names an empty folder).

It prints the install time, each pipeline step's wall time (read from the table
run_pipeline.sh prints at its end), the pipeline's total and the whole command's, with the
load average at the start and the end; per output folder, the calls and tokens from the
.run.json files. Results: benchmarks/results/demo.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, describe_machine, machine, median, run_timed, save_results, wait_for_quiet  # noqa: E402

TABLE_HEAD = "=== step times (wall clock, seconds)"
INSTALL = ["python3", "-m", "venv", ".venv"], [".venv/bin/pip", "install", "-q", "-e", "."]


def step_table(stdout: str) -> tuple[list[tuple[str, float]], float | None]:
    """run_pipeline.sh's closing table: [(step, seconds)] and its total (None if absent)."""
    if TABLE_HEAD not in stdout:
        return [], None
    steps, total = [], None
    for line in stdout[stdout.rindex(TABLE_HEAD) + len(TABLE_HEAD):].splitlines():
        m = re.match(r"^(.+?)\s+([\d.]+)$", line.strip())
        if not m:
            continue
        if m[1] == "total":
            total = float(m[2])
            break
        steps.append((m[1], float(m[2])))
    return steps, total


def folder_counts(run_dir: Path) -> dict[str, dict[str, float]]:
    """Per output folder, from each command's .run.json: commands, calls, cached replies,
    tokens, the commands' own seconds (stage 5's audit counted apart)."""
    out: dict[str, dict[str, float]] = {}
    for path in sorted(run_dir.glob("*/*.run.json")):
        info = json.loads(path.read_text(encoding="utf-8"))
        agg = out.setdefault(path.parent.name, {"commands": 0, "requests": 0, "cached": 0, "prompt_tokens": 0,
                                                "completion_tokens": 0, "seconds": 0.0, "audit_requests": 0,
                                                "audit_completion_tokens": 0, "audit_seconds": 0.0,
                                                "rows_not_sent": 0})
        agg["commands"] += 1
        agg["requests"] += info.get("requests", info.get("calls")) or 0  # stage 1 says "calls"
        for key in ("cached", "prompt_tokens", "completion_tokens", "seconds"):
            agg[key] += info.get(key) or 0
        audit = info.get("audit") or {}
        agg["audit_requests"] += audit.get("requests") or 0
        agg["audit_completion_tokens"] += audit.get("completion_tokens") or 0
        agg["audit_seconds"] += audit.get("seconds") or 0
        agg["rows_not_sent"] += (info.get("judge_skipped") or {}).get("rows_not_sent") or 0
    return out


def _clone(repo: Path, into: Path) -> str:
    subprocess.run(["git", "clone", "--quiet", str(repo), str(into)], check=True)
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=into, capture_output=True, text=True,
                          check=True).stdout.strip()


def run_once(repo: Path, venv: Path | None, pip_cache: Path | None, scratch: Path) -> dict:
    clone = scratch / "clone"
    commit = _clone(repo, clone)
    cache = scratch / "orbench-cache"
    cache.mkdir()
    env = {"ORBENCH_CACHE_DIR": str(cache)}  # a cold cache; no ORBENCH_LOCAL_URL: its own server
    drop = ("ORBENCH_LOCAL_URL", "PYTHONPATH", "PYTHON", "VIRTUAL_ENV")
    install_s = None
    if venv is None:
        pip_env = {"PIP_CACHE_DIR": str(pip_cache)} if pip_cache else {}
        install_s = 0.0
        for argv in INSTALL:
            t = run_timed(argv, env=pip_env, cwd=clone, drop=drop).ok()
            install_s += t.wall_s
    else:
        env["PYTHON"] = str(venv.resolve() / "bin" / "python")
    load_start = os.getloadavg()
    t = run_timed(["./run_pipeline.sh"], env=env, cwd=clone, drop=drop)
    steps, total = step_table(t.stdout)
    return {"commit": commit, "returncode": t.returncode, "install_s": install_s, "pipeline_wall_s": t.wall_s,
            "pipeline_table_total_s": total, "steps": steps, "cpu_s_children": t.cpu_s,
            "load_at_start": [round(x, 2) for x in load_start], "load_at_end": [round(x, 2) for x in os.getloadavg()],
            "per_folder": folder_counts(clone / "runs" / "demo"), "stdout_tail": t.stdout.splitlines()[-25:],
            "stderr_tail": t.stderr_tail}


def markdown(result: dict) -> str:
    """The run nearest the median: per step, then the totals."""
    r = result["typical"]
    lines = ["| step | seconds |", "|---|---:|"]
    if r["install_s"] is not None:
        lines.append(f"| install (venv + pip install -e .) | {r['install_s']:.1f} |")
    lines += [f"| {name} | {secs:.1f} |" for name, secs in r["steps"]]
    lines.append(f"| **./run_pipeline.sh, total** | **{r['pipeline_wall_s']:.1f}** |")
    if r["install_s"] is not None:
        lines.append(f"| **the whole command** | **{r['install_s'] + r['pipeline_wall_s']:.1f}** |")
    lines += ["", "| folder | commands | calls | cached | completion tokens | seconds (.run.json) | audit calls | "
              "rows not sent (gate) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for folder, a in r["per_folder"].items():
        lines.append(f"| {folder} | {a['commands']} | {a['requests'] + a['audit_requests']} | {a['cached']} | "
                     f"{a['completion_tokens'] + a['audit_completion_tokens']} | "
                     f"{a['seconds'] + a['audit_seconds']:.1f} | {a['audit_requests']} | {a['rows_not_sent']} |")
    return "\n".join(lines)


def run(*, repo: Path = ROOT, venv: Path | None = None, pip_cache: Path | None = None, scratch: Path | None = None,
        repeats: int = 1, max_load: float | None = None, section: str = "demo", log=print) -> dict:
    """Time the README's main command ``repeats`` times; save and return the results."""
    mach = machine()
    log(f"the README's main command on {describe_machine(mach)}; clone of {repo}")
    runs = []
    for rep in range(repeats):
        wait_for_quiet(max_load, log=log)
        folder = scratch or Path(tempfile.mkdtemp(prefix="orbench-bench-demo-"))
        if scratch is not None:
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            runs.append(run_once(repo.resolve(), venv, pip_cache, folder))
        finally:
            if scratch is None:
                shutil.rmtree(folder, ignore_errors=True)
        r = runs[-1]
        log(f"  [{rep + 1}/{repeats}] exit {r['returncode']}: pipeline {r['pipeline_wall_s']:.1f} s"
            + (f", install {r['install_s']:.1f} s" if r["install_s"] is not None else "")
            + f"; load average {r['load_at_start']} at the start, {r['load_at_end']} at the end")
        if r["returncode"] != 0:
            log("\n".join(r["stdout_tail"]) + "\n" + r["stderr_tail"])
    walls = [r["pipeline_wall_s"] for r in runs]
    typical = min(runs, key=lambda r: abs(r["pipeline_wall_s"] - median(walls)))
    result = {"section": section, "machine": mach, "repo": str(repo), "repeats": repeats,
              "venv": str(venv) if venv else None, "pip_cache_dir": str(pip_cache or ""),
              "pipeline_wall_s": median(walls), "pipeline_walls_s": walls, "typical": typical,
              "returncode": max(r["returncode"] for r in runs), "runs": runs}
    save_results(section, result)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone (default: this one)")
    p.add_argument("--venv", type=Path, default=None,
                   help="reuse this venv (its Python runs the pipeline) instead of installing into the clone")
    p.add_argument("--pip_cache_dir", type=Path, default=None,
                   help="pip's cache for the install (an empty folder: a cold cache); default: pip's own")
    p.add_argument("--scratch", type=Path, default=None, help="keep the clone here (default: a temporary folder)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--max_load", type=float, default=None,
                   help="before each run, wait until the 1-minute load average is below this")
    args = p.parse_args(argv)
    result = run(repo=args.repo, venv=args.venv, pip_cache=args.pip_cache_dir, scratch=args.scratch,
                 repeats=args.repeats, max_load=args.max_load, log=lambda m: print(m, flush=True))
    print(markdown(result))
    return result["returncode"]

if __name__ == "__main__":
    sys.exit(main())
