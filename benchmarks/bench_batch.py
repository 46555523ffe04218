"""Batch mode's own cost over 80,000 rows: planning (the requests the cache cannot answer, as
batch JSONL files) and importing the result files into the cache.

    python benchmarks/bench_batch.py [--rows 80000] [--repeats 3]

1. Writes 80,000 distinct OR-Bench-length prompts, and a registry that points the target at a
   closed loopback port (planning must not talk to anyone).
2. plan: stage 4 with ``--batch_export DIR``, called in-process (CSV read, the handler over
   every row, shard files written); two shards of 50,000 and 30,000 requests.
3. The shards are answered as `vllm run-batch` would (XSTest's real completions, ~730
   characters each), untimed.
4. import: every result line parsed and stored in a fresh response cache
   (``orbench.batch.results.import_file``, one transaction per file).
5. The whole ``--batch_import`` command as a subprocess, which plans again, imports and then
   runs the cached finish (the rate of the finish is in docs/benchmarks.md, section 3).
Figures are medians over the repeats; the target is >= 20,000 rows/s for plan + import.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    PYTHON, TARGET, cached_stage4_inputs, describe_machine, machine, median, run_timed, save_results, temp_folder,
)

ROWS = 80_000
TARGET_ROWS_PER_S = 20_000


def answer_shards(folder: Path, responses: list[str]) -> list[Path]:
    """Result files in `vllm run-batch`'s output format, one per shard."""
    outs = []
    for n_shard, shard in enumerate(sorted(folder.glob("*.jsonl"))):
        out = shard.with_name(shard.stem + ".results.jsonl")
        with open(shard, "rb") as src, open(out, "w", encoding="utf-8") as dst:
            for i, raw in enumerate(src):
                req = json.loads(raw)
                text = responses[i % len(responses)]
                body = {"id": f"cmpl-{n_shard}-{i}", "object": "chat.completion", "model": req["body"]["model"],
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 30, "completion_tokens": len(text.split()), "total_tokens": 0}}
                dst.write(json.dumps({"id": f"vllm-{n_shard}-{i}", "custom_id": req["custom_id"],
                                      "response": {"status_code": 200, "request_id": f"r{i}", "body": body},
                                      "error": None}) + "\n")
        outs.append(out)
    return outs


def run(*, rows: int = ROWS, repeats: int = 3, log=print) -> dict:
    from orbench.batch.results import import_file
    from orbench.engine.cache import ResponseCache
    from orbench.stages.alignment import main as stage4

    mach = machine()
    log(f"batch planning and import over {rows:,} rows on {describe_machine(mach)}")
    runs = []
    with temp_folder("orbench-bench-batch-") as tmp:
        data, inp, mf = cached_stage4_inputs(tmp, rows)
        responses = sorted({r["response"] for r in data})
        for rep in range(repeats):
            work = Path(tempfile.mkdtemp(dir=tmp))
            shards, cache_path = work / "shards", work / "cache" / "responses.sqlite3"
            argv = ["--model", TARGET, "--input_file", str(inp), "--models_file", str(mf),
                    "--output_path", str(work / "out.csv"), "--cache_path", str(cache_path)]
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                code = stage4([*argv, "--batch_export", str(shards)])
            plan_s = time.perf_counter() - start
            if code != 0:
                raise RuntimeError(f"--batch_export exited {code}")
            results = answer_shards(shards, responses)
            cache = ResponseCache(cache_path)
            start = time.perf_counter()
            imported = sum(import_file(p, cache, None, "").cached for p in results)
            import_s = time.perf_counter() - start
            cache.close()
            if imported != rows:
                raise RuntimeError(f"imported {imported} of {rows} results")
            # The whole command, on a fresh cache: plan again, import, cached finish.
            fresh = ["--cache_path", str(work / "cache2" / "responses.sqlite3")]
            cmd = [PYTHON, "alignment_checker/gpt3_4_alignment_checker.py", *argv[:-2], *fresh,
                   "--batch_import", *map(str, results)]
            whole = run_timed(cmd, env={"ORBENCH_BACKOFF_BASE": "0"}).ok()
            info = json.loads((work / "out.run.json").read_text())
            if info["cached"] != rows or info["requests"] != 0:
                raise RuntimeError(f"the finish was not served from the imported cache: {info}")
            runs.append({"plan_s": plan_s, "import_s": import_s, "shards": len(results),
                         "command_wall_s": whole.wall_s, "command_peak_rss_mb": whole.peak_rss_mb})
            log(f"  [{rep + 1}/{repeats}] plan {plan_s:.2f} s, import {import_s:.2f} s "
                f"({rows / (plan_s + import_s):,.0f} rows/s); whole --batch_import command {whole.wall_s:.2f} s")
    plan_s, import_s = median([r["plan_s"] for r in runs]), median([r["import_s"] for r in runs])
    summary = {"plan_s": plan_s, "import_s": import_s, "rows_per_s": rows / (plan_s + import_s),
               "plan_rows_per_s": rows / plan_s, "import_rows_per_s": rows / import_s,
               "command_wall_s": median([r["command_wall_s"] for r in runs]),
               "command_peak_rss_mb": max(r["command_peak_rss_mb"] for r in runs),
               "target_rows_per_s": TARGET_ROWS_PER_S}
    summary["met"] = summary["rows_per_s"] >= TARGET_ROWS_PER_S
    result = {"section": "batch", "machine": mach, "rows": rows, "repeats": repeats, "runs": runs, "summary": summary}
    save_results("batch", result)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    s = run(rows=args.rows, repeats=args.repeats)["summary"]
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in s.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
