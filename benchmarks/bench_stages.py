"""Throughput of stages 4, 3 (a 3-moderator ensemble) and 5 against the fake server, side by
side with the two reference loops in benchmarks/loops.py.

    python benchmarks/bench_stages.py --stage 4 [--repeats 3] [--latency 0.2]
    python benchmarks/bench_stages.py --stage 4 --whole [--repeats 5] [--with_cache] [--also ../main]

Every arm is a whole process: the stage script, and the bare AsyncOpenAI loop
(benchmarks/loops.py), each spawned as a subprocess and timed from spawn to exit, imports and
start-up included, as a user sees it; the fake server runs in a third process. The in-process
time is reported too (the stage's ``seconds`` from its .run.json, the loops' own clock).
Stages run with ``--no_cache``, so every row is a request. Arms are interleaved within each
repeat, so that load from other processes falls on all of them alike; figures are medians
over the repeats, and a ratio is the median of the ratios measured within the same repeat.

--whole is issue 26's figure: stage 4 against the bare loop at concurrency 64 over 4,000 rows,
without the sequential loop. --with_cache adds the stage with a fresh response cache (what a
user runs by default), --also DIR the same stage from another checkout (e.g. main in a second
worktree): more arms of every repeat, for a before/after in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    MODERATORS, PYTHON, ROOT, TARGET, describe_machine, wait_for_quiet, fake_server, last_json_line, machine, make_rows, median,
    models_toml, run_timed, save_results, temp_folder, write_csv,
)

CONCURRENCIES = (1, 16, 64)
ROWS = 2000
ROWS_AT_1 = 200  # 2,000 rows one at a time would take 400 s per arm at 200 ms
WHOLE_ROWS = 4000  # --whole: issue 26's stage-4 figure, at concurrency 64
WHOLE_TARGET = 0.9

# Per stage: the loops' request kind, the loops' model ids, and the stage command.
STAGES = {
    "4": {"kind": "alignment", "models": ["fake-model"], "responses": False},
    "3": {"kind": "moderate", "models": list(MODERATORS), "responses": False},
    "5": {"kind": "judge", "models": ["fake-model"], "responses": True},
}


def stage_argv(stage: str, inp: Path, out: Path, models_file: Path, concurrency: int, limit: int,
               moderators: list[str] | None = None, cache: Path | None = None) -> list[str]:
    """The stage's command; with ``cache``, a response cache there instead of --no_cache."""
    caching = ["--cache_path", str(cache)] if cache else ["--no_cache"]
    common = ["--models_file", str(models_file), "--concurrency", str(concurrency), *caching,
              "--limit", str(limit), "--output_path", str(out)]
    if stage == "4":
        return [PYTHON, "alignment_checker/gpt3_4_alignment_checker.py", "--model", TARGET, "--input_file", str(inp), *common]
    if stage == "3":
        return [PYTHON, "moderator/moderate_only.py", "--moderator_model", ",".join(moderators or MODERATORS),
                "--input_file_path", str(inp), "--column", "prompt", *common]
    if stage == "5":
        # --audit 0: the judge audit's 100 requests are not rows; this measures the rows' throughput
        return [PYTHON, "response_checker/check_response.py", "--check_model", TARGET, "--input_file", str(inp),
                "--audit", "0", *common]
    raise ValueError(stage)


def run_stage(stage: str, srv, inp: Path, tmp: Path, models_file: Path, concurrency: int, limit: int,
              moderators: list[str] | None = None, checkout: Path = ROOT, cached: bool = False) -> dict:
    folder = Path(tempfile.mkdtemp(dir=tmp))  # a new output (and cache) every time: nothing to resume
    out = folder / "bench_merged_input.csv"
    server_cpu = srv.cpu_s()
    cache = folder / "responses.sqlite3" if cached else None
    t = run_timed(stage_argv(stage, inp, out, models_file, concurrency, limit, moderators, cache), cwd=checkout).ok()
    info = json.loads(out.with_name(out.stem + ".run.json").read_text())
    if info["rows_done"] != limit or info.get("rows_failed"):
        raise RuntimeError(f"stage {stage} did {info['rows_done']} rows with {info.get('rows_failed')} failed")
    if info.get("unparsed_replies") or info.get("unscored"):  # the responder must speak the protocol
        raise RuntimeError(f"stage {stage} could not parse some replies: {info}")
    shutil.rmtree(folder)
    return {"rows": limit, "requests": info["requests"], "wall_s": t.wall_s, "inproc_s": info["seconds"],
            "cpu_s": t.cpu_s, "load1": t.load1, "peak_rss_mb": t.peak_rss_mb, "server_cpu_s": srv.cpu_s() - server_cpu}


def run_loop(loop: str, srv, spec: dict, inp: Path, tmp: Path, concurrency: int, limit: int) -> dict:
    server_cpu = srv.cpu_s()
    t = run_timed([PYTHON, "benchmarks/loops.py", loop, "--base_url", srv.base_url, "--models",
                   ",".join(spec["models"]), "--kind", spec["kind"], "--input", str(inp), "--output",
                   str(tmp / f"{loop}.csv"), "--concurrency", str(concurrency), "--limit", str(limit)]).ok()
    own = last_json_line(t.stdout)
    return {"rows": own["rows"], "requests": own["requests"], "wall_s": t.wall_s, "inproc_s": own["seconds"],
            "cpu_s": t.cpu_s, "load1": t.load1, "peak_rss_mb": t.peak_rss_mb, "server_cpu_s": srv.cpu_s() - server_cpu}


def rate(arm: dict, clock: str = "wall_s") -> float:
    return arm["rows"] / arm[clock]


def run(stage: str, *, repeats: int = 3, latency: float = 0.2, concurrencies=CONCURRENCIES,
        rows: int = ROWS, rows_at_1: int = ROWS_AT_1, sequential_rows: int = ROWS_AT_1, max_load: float | None = None,
        also: Path | None = None, with_cache: bool = False, save_as: str | None = None, log=print) -> dict:
    spec = STAGES[stage]
    mach = machine()
    log(f"stage {stage} throughput on {describe_machine(mach)}; fake server latency {latency * 1000:.0f} ms")
    repeat_runs = []
    with temp_folder(f"orbench-bench-s{stage}-") as tmp, fake_server(latency) as srv:
        inp = write_csv(tmp / "input.csv", make_rows(max(rows, rows_at_1, sequential_rows), with_response=spec["responses"]))
        mf = models_toml(tmp / "models.toml", srv.base_url)
        for rep in range(repeats):
            wait_for_quiet(max_load, log=log)
            arms: dict[str, dict] = {}
            if sequential_rows:
                arms["sequential"] = run_loop("sequential", srv, spec, inp, tmp, 1, sequential_rows)
                log(f"  [{rep + 1}/{repeats}] sequential: {rate(arms['sequential']):7.1f} rows/s")
            for c in concurrencies:
                n = rows_at_1 if c == 1 else rows
                arms[f"bare_c{c}"] = run_loop("bare", srv, spec, inp, tmp, c, n)
                arms[f"stage_c{c}"] = run_stage(stage, srv, inp, tmp, mf, c, n)
                line = (f"  [{rep + 1}/{repeats}] c={c:<3d} bare {rate(arms[f'bare_c{c}']):7.1f} rows/s, "
                        f"stage {rate(arms[f'stage_c{c}']):7.1f} rows/s")
                if with_cache:  # the user's default: replies written to a (fresh) response cache
                    arms[f"cache_c{c}"] = run_stage(stage, srv, inp, tmp, mf, c, n, cached=True)
                    line += f", stage with a cache {rate(arms[f'cache_c{c}']):7.1f} rows/s"
                if also is not None:
                    arms[f"also_c{c}"] = run_stage(stage, srv, inp, tmp, mf, c, n, checkout=also)
                    line += f", stage at {also.name} {rate(arms[f'also_c{c}']):7.1f} rows/s"
                if stage == "3":  # the same stage with one moderator: what does the ensemble cost?
                    arms[f"single_c{c}"] = run_stage(stage, srv, inp, tmp, mf, c, n, moderators=[MODERATORS[0]])
                    line += f", one moderator {rate(arms[f'single_c{c}']):7.1f} rows/s"
                log(line)
            repeat_runs.append(arms)
    result = {"section": f"stage{stage}", "machine": mach, "latency_s": latency, "repeats": repeats,
              "median_load1": median([a["load1"] for r in repeat_runs for a in r.values()]),
              "rows": rows, "rows_at_1": rows_at_1, "sequential_rows": sequential_rows,
              "also": str(also) if also else None,
              "models": spec["models"], "runs": repeat_runs, "summary": summarize(repeat_runs, concurrencies, stage)}
    save_results(save_as or f"stage{stage}", result)
    return result


def summarize(repeat_runs: list[dict], concurrencies, stage: str) -> dict:
    def med(arm: str, clock: str = "wall_s") -> float:
        return median([rate(r[arm], clock) for r in repeat_runs])

    def med_ratio(a: str, b: str, clock: str = "wall_s") -> float:
        return median([rate(r[a], clock) / rate(r[b], clock) for r in repeat_runs])

    has_sequential = all("sequential" in r for r in repeat_runs)
    out = {"sequential_rows_per_s": med("sequential"), "sequential_rows_per_s_inproc": med("sequential", "inproc_s")} \
        if has_sequential else {}
    for c in concurrencies:
        s = {
            "bare_rows_per_s": med(f"bare_c{c}"), "bare_rows_per_s_inproc": med(f"bare_c{c}", "inproc_s"),
            "stage_rows_per_s": med(f"stage_c{c}"), "stage_rows_per_s_inproc": med(f"stage_c{c}", "inproc_s"),
            "stage_vs_bare": med_ratio(f"stage_c{c}", f"bare_c{c}"),
            "stage_vs_bare_inproc": med_ratio(f"stage_c{c}", f"bare_c{c}", "inproc_s"),
            "stage_vs_sequential": med_ratio(f"stage_c{c}", "sequential") if has_sequential else None,
            "stage_cpu_ms_per_request": median([r[f"stage_c{c}"]["cpu_s"] / r[f"stage_c{c}"]["requests"] * 1000 for r in repeat_runs]),
            "bare_cpu_ms_per_request": median([r[f"bare_c{c}"]["cpu_s"] / r[f"bare_c{c}"]["requests"] * 1000 for r in repeat_runs]),
            # Whole command minus in-process time: start-up (imports, reading input) and wind-down.
            "stage_outside_s": median([r[f"stage_c{c}"]["wall_s"] - r[f"stage_c{c}"]["inproc_s"] for r in repeat_runs]),
            "bare_outside_s": median([r[f"bare_c{c}"]["wall_s"] - r[f"bare_c{c}"]["inproc_s"] for r in repeat_runs]),
        }
        for arm in ("cache", "also"):  # the optional arms of --whole
            if all(f"{arm}_c{c}" in r for r in repeat_runs):
                s[f"{arm}_rows_per_s"] = med(f"{arm}_c{c}")
                s[f"{arm}_vs_bare"] = med_ratio(f"{arm}_c{c}", f"bare_c{c}")
                s[f"{arm}_cpu_ms_per_request"] = median([r[f"{arm}_c{c}"]["cpu_s"] / r[f"{arm}_c{c}"]["requests"] * 1000
                                                         for r in repeat_runs])
        if stage == "3":
            s["single_rows_per_s"] = med(f"single_c{c}")
            s["ensemble_vs_single"] = med_ratio(f"stage_c{c}", f"single_c{c}")
        out[f"c{c}"] = s
    return out


def markdown(result: dict) -> str:
    s = result["summary"]
    stage = result["section"].removeprefix("stage")
    lines = [
        f"| concurrency | sequential loop rows/s | bare AsyncOpenAI rows/s | stage rows/s | stage / bare (target >= 0.85) "
        f"| stage / sequential{' (target >= 40 at 64)' if stage == '4' else ''} | stage / bare, in-process "
        f"| start-up + wind-down s, stage / bare |" + (" one moderator rows/s | ensemble / one |" if stage == "3" else ""),
        "|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if stage == "3" else ""),
    ]
    for key, c in ((k, int(k[1:])) for k in s if k.startswith("c") and k[1:].isdigit()):
        r = s[key]
        met = "met" if r["stage_vs_bare"] >= 0.85 else "**missed**"
        seq = f"{s['sequential_rows_per_s']:.2f}" if "sequential_rows_per_s" in s else "–"
        vs_seq = f"{r['stage_vs_sequential']:.1f}x" if r["stage_vs_sequential"] is not None else "–"
        row = (f"| {c} | {seq} | {r['bare_rows_per_s']:.1f} | {r['stage_rows_per_s']:.1f} "
               f"| {r['stage_vs_bare']:.2f} ({met}) | {vs_seq} | {r['stage_vs_bare_inproc']:.2f} "
               f"| {r['stage_outside_s']:.2f} / {r['bare_outside_s']:.2f} |")
        if stage == "3":
            row += f" {r['single_rows_per_s']:.1f} | {r['ensemble_vs_single']:.2f} |"
        lines.append(row)
    return "\n".join(lines)


def markdown_whole(result: dict, target: float = WHOLE_TARGET) -> str:
    """--whole: each arm as a whole process (start-up included), and what it costs per request."""
    lines = ["| arm | rows/s, whole process | ÷ bare, same repeat | rows/s, in-process | CPU ms per request "
             "| start-up + wind-down s |", "|---|---:|---:|---:|---:|---:|"]
    runs = result["runs"]
    names = {"bare": "bare AsyncOpenAI loop", "stage": f"stage {result['section'][5]} (--no_cache)",
             "cache": f"stage {result['section'][5]} with a fresh cache",
             "also": f"stage {result['section'][5]} at {Path(result.get('also') or '.').name} (--no_cache)"}
    for key, c in ((k, int(k[1:])) for k in result["summary"] if k.startswith("c") and k[1:].isdigit()):
        r = result["summary"][key]
        for arm, name in names.items():
            if f"{arm}_c{c}" not in runs[0]:
                continue
            one = [x[f"{arm}_c{c}"] for x in runs]
            ratio = "1" if arm == "bare" else f"{r[f'{arm}_vs_bare']:.2f}"
            if arm == "stage":
                ratio = f"**{ratio}** ({'met' if r['stage_vs_bare'] >= target else '**missed**'}, target >= {target})"
            lines.append(f"| {name}, c={c} | {r[f'{arm}_rows_per_s']:.1f} | {ratio} "
                         f"| {median([a['rows'] / a['inproc_s'] for a in one]):.1f} "
                         f"| {median([a['cpu_s'] / a['requests'] * 1000 for a in one]):.2f} "
                         f"| {median([a['wall_s'] - a['inproc_s'] for a in one]):.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stage", choices=sorted(STAGES), required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--latency", type=float, default=0.2, help="fake server latency in seconds (default 0.2)")
    p.add_argument("--concurrency", default=",".join(map(str, CONCURRENCIES)), help="comma-separated (default 1,16,64)")
    p.add_argument("--rows", type=int, default=ROWS, help=f"rows at concurrency > 1 (default {ROWS})")
    p.add_argument("--rows_at_1", type=int, default=ROWS_AT_1, help=f"rows at concurrency 1 and for the sequential loop (default {ROWS_AT_1})")
    p.add_argument("--max_load", type=float, default=None, help="before each repeat, wait until the 1-min load average is below this")
    p.add_argument("--whole", action="store_true",
                   help=f"issue 26's figure: concurrency 64, {WHOLE_ROWS} rows, no sequential loop (overrides those options)")
    p.add_argument("--with_cache", action="store_true",
                   help="also run the stage with a fresh response cache (the user's default) in every repeat")
    p.add_argument("--also", type=Path, default=None, metavar="DIR",
                   help="also run the stage script of this checkout in every repeat (a before/after)")
    args = p.parse_args(argv)
    concurrencies = (64,) if args.whole else tuple(int(c) for c in args.concurrency.split(","))
    rows = WHOLE_ROWS if args.whole else args.rows
    result = run(args.stage, repeats=args.repeats, latency=args.latency, concurrencies=concurrencies, rows=rows,
                 rows_at_1=args.rows_at_1, sequential_rows=0 if args.whole else args.rows_at_1,
                 max_load=args.max_load, also=args.also.resolve() if args.also else None, with_cache=args.with_cache,
                 save_as=f"stage{args.stage}_whole" if args.whole else None)
    print(markdown_whole(result) if args.whole else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
