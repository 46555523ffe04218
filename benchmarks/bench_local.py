"""The embedded model (SmolLM2-135M-Instruct on llama.cpp): tokens/s through stage 4 against the
same requests sent straight to the llama.cpp server. (The main command's wall time:
benchmarks/bench_demo.py.)

    python benchmarks/bench_local.py tokens [--repeats 3] [--max_tokens 128]

``tokens`` starts ``python -m orbench.engine.local_server serve`` once (with a fresh cache folder),
then, in turn and alternating:
- direct: benchmarks/loops.py ``bare`` (AsyncOpenAI, concurrency 2 = the registry's default for
  ``local``) and ``sequential`` (one request at a time), straight to the server's URL;
- stage 4: ``gpt3_4_alignment_checker.py --model local --no_cache`` with ORBENCH_LOCAL_URL set
  to that URL, so it uses the same server.
All send the 8 prompts of examples/sample_prompts.csv, temperature 0, --max_tokens.
tokens/s = completion tokens reported by the server / seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    PYTHON, ROOT, describe_machine, wait_for_quiet, last_json_line, machine, median, run_timed, save_results,
    stop_process, temp_folder,
)

PROMPTS = ROOT / "examples" / "sample_prompts.csv"
MODEL_ID = "SmolLM2-135M-Instruct"  # what stage 4 sends for --model local


def start_local_server(cache_dir: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "ORBENCH_CACHE_DIR": str(cache_dir)}
    env.pop("ORBENCH_LOCAL_URL", None)
    env.setdefault("ORBENCH_LOCAL_REPLICAS", "1")  # one server's tokens/s, straight and through stage 4
    proc = subprocess.Popen([PYTHON, "-m", "orbench.engine.local_server", "serve"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    url = (proc.stdout.readline() if proc.stdout else "").strip()
    if not url.startswith("http"):
        proc.terminate()
        raise RuntimeError(f"the local server did not start (exit {proc.wait()}); see {cache_dir}/local_server.log")
    return proc, url


def direct(loop: str, url: str, tmp: Path, max_tokens: int, concurrency: int) -> dict:
    t = run_timed([PYTHON, "benchmarks/loops.py", loop, "--base_url", url, "--models", MODEL_ID, "--kind", "alignment",
                   "--input", str(PROMPTS), "--output", str(tmp / f"{loop}.csv"), "--concurrency", str(concurrency),
                   "--max_tokens", str(max_tokens), "--timeout", "600"]).ok()
    own = last_json_line(t.stdout)
    return {"wall_s": t.wall_s, "inproc_s": own["seconds"], "completion_tokens": own["completion_tokens"],
            "requests": own["requests"], "load1": t.load1}


def stage(url: str, tmp: Path, max_tokens: int) -> dict:
    folder = Path(tempfile.mkdtemp(dir=tmp))
    out = folder / "local_merged_sample_prompts.csv"
    t = run_timed([PYTHON, "alignment_checker/gpt3_4_alignment_checker.py", "--model", "local", "--input_file",
                   str(PROMPTS), "--max_tokens", str(max_tokens), "--no_cache", "--output_path", str(out)],
                  env={"ORBENCH_LOCAL_URL": url}).ok()
    info = json.loads(out.with_name(out.stem + ".run.json").read_text())
    if info.get("rows_failed"):
        raise RuntimeError(f"stage 4 on the local model had failed rows: {info}")
    shutil.rmtree(folder)
    return {"wall_s": t.wall_s, "inproc_s": info["seconds"], "completion_tokens": info["completion_tokens"],
            "requests": info["requests"], "load1": t.load1}


def tps(arm: dict, clock: str) -> float:
    return arm["completion_tokens"] / arm[clock]


def run_tokens(*, repeats: int = 3, max_tokens: int = 128, max_load: float | None = None, log=print) -> dict:
    mach = machine()
    log(f"embedded model tokens/s on {describe_machine(mach)}")
    runs = []
    with temp_folder("orbench-bench-local-") as tmp:
        started = time.perf_counter()
        proc, url = start_local_server(tmp / "cache")
        start_s = time.perf_counter() - started
        log(f"  local server up at {url} in {start_s:.1f} s")
        try:
            direct("sequential", url, tmp, 8, 1)  # warm-up: first requests pay one-off costs
            for rep in range(repeats):
                wait_for_quiet(max_load, log=log)
                arms = {"direct_bare_c2": direct("bare", url, tmp, max_tokens, 2),
                        "stage4": stage(url, tmp, max_tokens),
                        "direct_sequential": direct("sequential", url, tmp, max_tokens, 1)}
                runs.append(arms)
                log(f"  [{rep + 1}/{repeats}] " + ", ".join(
                    f"{k} {tps(v, 'inproc_s'):.1f} tok/s ({v['completion_tokens']} tokens, {v['wall_s']:.1f} s wall)"
                    for k, v in arms.items()))
        finally:
            stop_process(proc, timeout=20)
    summary = {}
    for arm in runs[0]:
        summary[arm] = {"tokens_per_s_inproc": median([tps(r[arm], "inproc_s") for r in runs]),
                        "tokens_per_s_wall": median([tps(r[arm], "wall_s") for r in runs]),
                        "completion_tokens": median([r[arm]["completion_tokens"] for r in runs]),
                        "wall_s": median([r[arm]["wall_s"] for r in runs])}
    summary["median_load1"] = median([a["load1"] for r in runs for a in r.values()])
    summary["stage_vs_direct_inproc"] = median([tps(r["stage4"], "inproc_s") / tps(r["direct_bare_c2"], "inproc_s") for r in runs])
    summary["stage_vs_direct_wall"] = median([tps(r["stage4"], "wall_s") / tps(r["direct_bare_c2"], "wall_s") for r in runs])
    result = {"section": "local", "machine": mach, "repeats": repeats, "max_tokens": max_tokens,
              "prompts": str(PROMPTS.relative_to(ROOT)), "server_start_s": start_s, "runs": runs, "summary": summary}
    save_results("local", result)
    return result


def markdown_tokens(result: dict) -> str:
    s = result["summary"]
    names = {"direct_bare_c2": "direct, AsyncOpenAI, 2 in flight", "direct_sequential": "direct, one at a time",
             "stage4": "stage 4 `--model local` (2 in flight)"}
    lines = ["| arm | completion tokens | tokens/s (in-process) | tokens/s (whole command) |", "|---|---:|---:|---:|"]
    for arm in ("direct_bare_c2", "direct_sequential", "stage4"):
        a = s[arm]
        lines.append(f"| {names[arm]} | {a['completion_tokens']:.0f} | {a['tokens_per_s_inproc']:.1f} | {a['tokens_per_s_wall']:.1f} |")
    lines.append(f"| stage 4 / direct (2 in flight) | | {s['stage_vs_direct_inproc']:.2f} | {s['stage_vs_direct_wall']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tokens")
    t.add_argument("--repeats", type=int, default=3)
    t.add_argument("--max_tokens", type=int, default=128)
    t.add_argument("--max_load", type=float, default=None, help="before each repeat, wait until the 1-min load average is below this")
    args = p.parse_args(argv)
    print(markdown_tokens(run_tokens(repeats=args.repeats, max_tokens=args.max_tokens, max_load=args.max_load)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
