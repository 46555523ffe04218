"""Stage 4 over 80,000 rows (the size of OR-Bench-80K) from a warm cache, and the re-run of a
finished output.

    python benchmarks/bench_cached.py [--rows 80000] [--repeats 3]

1. Builds 80,000 distinct prompts (~130 characters) and fills a fresh response cache with a
   real-length reply for each (XSTest's human-labelled completions, ~730 characters on
   average), under the very keys stage 4 computes (``LLMClient.key_for``).
2. "warm": runs stage 4 as a user would, with that cache and a new output file. The registry
   points the model at a closed loopback port, so any cache miss would show up as a failed
   row; the run must report 80,000 cached replies and 0 requests.
3. "complete": runs the same command again; the output is already complete, so every row
   should be skipped.
Each command is timed from start to exit; peak memory is the child's maximum resident set
size (wait4). Figures are medians over the repeats.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    PYTHON, TARGET, cached_stage4_inputs, describe_machine, wait_for_quiet, machine, median, run_timed, save_results,
    temp_folder,
)

ROWS = 80_000
TARGET_ROWS_PER_S = 5_000
TARGET_PEAK_MB = 400


def fill_cache(cache_path: Path, models_file: Path, rows: list[dict[str, str]]) -> float:
    """Store one reply per prompt under stage 4's own cache key. Returns seconds taken."""
    from orbench.engine.cache import ResponseCache
    from orbench.engine.llm import LLMClient, LLMResult
    from orbench.engine.registry import resolve

    start = time.perf_counter()
    client = LLMClient(resolve(TARGET, models_file))
    cache = ResponseCache(cache_path)
    settings = {"temperature": 0.0, "max_tokens": 1000}  # stage 4's defaults
    items = []
    for row in rows:
        key = client.key_for([{"role": "user", "content": row["prompt"]}], settings, 0)
        reply = LLMResult(text=row["response"], finish_reason="stop", prompt_tokens=len(row["prompt"].split()),
                          completion_tokens=len(row["response"].split()), model="fake-model")
        items.append((key, reply.to_cache()))
    cache.put_many(items)
    cache.close()
    return time.perf_counter() - start


def stage4(inp: Path, out: Path, models_file: Path, cache_path: Path) -> list[str]:
    return [PYTHON, "alignment_checker/gpt3_4_alignment_checker.py", "--model", TARGET, "--input_file", str(inp),
            "--output_path", str(out), "--models_file", str(models_file), "--cache_path", str(cache_path)]


def run(*, rows: int = ROWS, repeats: int = 3, max_load: float | None = None, log=print) -> dict:
    mach = machine()
    log(f"cached re-run of stage 4 over {rows:,} rows on {describe_machine(mach)}")
    runs = []
    with temp_folder("orbench-bench-cached-") as tmp:
        data, inp, mf = cached_stage4_inputs(tmp, rows)
        cache_path = tmp / "cache" / "responses.sqlite3"
        fill_s = fill_cache(cache_path, mf, data)
        log(f"  filled the cache with {rows:,} replies in {fill_s:.1f} s ({cache_path.stat().st_size / 1e6:.0f} MB)")
        env = {"ORBENCH_BACKOFF_BASE": "0"}  # a miss fails at once instead of backing off
        for rep in range(repeats):
            wait_for_quiet(max_load, log=log)
            folder = Path(tempfile.mkdtemp(dir=tmp))
            out = folder / f"{TARGET}_merged_or-bench-80k.csv"
            argv = stage4(inp, out, mf, cache_path)
            warm = run_timed(argv, env=env).ok()
            info = json.loads(out.with_name(out.stem + ".run.json").read_text())
            if info["cached"] != rows or info["requests"] != 0 or info["rows_done"] != rows:
                raise RuntimeError(f"the warm run was not served from the cache: {info}")
            again = run_timed(argv, env=env).ok()
            info2 = json.loads(out.with_name(out.stem + ".run.json").read_text())
            if info2["rows_done_before"] != rows or info2["cached"] != 0:
                raise RuntimeError(f"the re-run of a complete output did not skip every row: {info2}")
            runs.append({
                "warm": {"wall_s": warm.wall_s, "cpu_s": warm.cpu_s, "peak_rss_mb": warm.peak_rss_mb,
                         "inproc_s": info["seconds"], "cached": info["cached"], "load1": warm.load1},
                "complete": {"wall_s": again.wall_s, "cpu_s": again.cpu_s, "peak_rss_mb": again.peak_rss_mb,
                             "inproc_s": info2["seconds"], "skipped": info2["rows_done_before"], "load1": again.load1},
            })
            log(f"  [{rep + 1}/{repeats}] warm cache: {warm.wall_s:.2f} s ({rows / warm.wall_s:,.0f} rows/s, "
                f"peak {warm.peak_rss_mb:.0f} MB); complete output: {again.wall_s:.2f} s "
                f"(peak {again.peak_rss_mb:.0f} MB)")
            shutil.rmtree(folder)
        command = " ".join(stage4(Path("or-bench-80k.csv"), Path("out/bench-target_merged_or-bench-80k.csv"),
                                  Path("models.toml"), Path("cache/responses.sqlite3"))[1:])
    warm_wall = median([r["warm"]["wall_s"] for r in runs])
    summary = {
        "warm_wall_s": warm_wall,
        "warm_rows_per_s": rows / warm_wall,
        "warm_inproc_s": median([r["warm"]["inproc_s"] for r in runs]),
        "warm_peak_rss_mb": max(r["warm"]["peak_rss_mb"] for r in runs),
        "complete_wall_s": median([r["complete"]["wall_s"] for r in runs]),
        "complete_inproc_s": median([r["complete"]["inproc_s"] for r in runs]),
        "complete_peak_rss_mb": max(r["complete"]["peak_rss_mb"] for r in runs),
        "target_rows_per_s": TARGET_ROWS_PER_S,
        "target_peak_mb": TARGET_PEAK_MB,
    }
    summary["rows_per_s_met"] = summary["warm_rows_per_s"] >= TARGET_ROWS_PER_S
    summary["memory_met"] = summary["warm_peak_rss_mb"] <= TARGET_PEAK_MB
    summary["median_load1"] = median([r[k]["load1"] for r in runs for k in ("warm", "complete")])
    result = {"section": "cached", "machine": mach, "rows": rows, "repeats": repeats, "fill_cache_s": fill_s,
              "stage_command": f"python {command}", "runs": runs, "summary": summary}
    save_results("cached", result)
    return result


def markdown(result: dict) -> str:
    s = result["summary"]
    rows = result["rows"]

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    return "\n".join([
        "| run | wall s | rows/s | in-process s | peak RSS MB | target |",
        "|---|---:|---:|---:|---:|---|",
        f"| warm cache, new output ({rows:,} rows) | {s['warm_wall_s']:.2f} | {s['warm_rows_per_s']:,.0f} "
        f"| {s['warm_inproc_s']:.2f} | {s['warm_peak_rss_mb']:.0f} | >= {TARGET_ROWS_PER_S:,} rows/s: "
        f"{met(s['rows_per_s_met'])}; <= {TARGET_PEAK_MB} MB: {met(s['memory_met'])} |",
        f"| output already complete | {s['complete_wall_s']:.2f} | - | {s['complete_inproc_s']:.2f} "
        f"| {s['complete_peak_rss_mb']:.0f} | skips all {rows:,} rows |",
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=ROWS)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max_load", type=float, default=None, help="before each repeat, wait until the 1-min load average is below this")
    args = p.parse_args(argv)
    print(markdown(run(rows=args.rows, repeats=args.repeats, max_load=args.max_load)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
