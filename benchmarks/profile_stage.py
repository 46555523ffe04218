"""Where a stage's time goes: run one stage command under pyinstrument against the fake server
and sum the profile into a few buckets.

    python benchmarks/profile_stage.py --stage 4 --concurrency 64 --rows 2000
    python benchmarks/profile_stage.py --stage 4 --cached 80000        # warm-cache run, no server
    python benchmarks/profile_stage.py --stage 5 --rows 1 --concurrency 1   # start-up alone
    python benchmarks/profile_stage.py --stage 4 --concurrency 64 --bare    # the bound, for comparison

Buckets (self time of the main thread, attributed by the innermost frame that decides it):
  idle             the event loop waiting for the server (select/epoll)
  openai SDK       inside AsyncCompletions.create (request building, httpx, response parsing)
  imports: X       module imports at start-up, by the first library imported on the way
  orbench: FILE F  our code, by file and function (with the library calls it makes that are
                   not the SDK: tenacity, csv, sqlite, pandas, ...)
  other            the event loop itself, asyncio, stdlib
pyinstrument's own overhead inflates deep call stacks (the SDK's most of all); compare
buckets within one profile rather than with unprofiled wall times.
The text tree and the bucket table are written to benchmarks/results/profile_*.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_cached import fill_cache  # noqa: E402
from benchmarks.bench_stages import STAGES, stage_argv  # noqa: E402
from benchmarks.common import (  # noqa: E402
    PYTHON, RESULTS_DIR, ROOT, cached_stage4_inputs, fake_server, make_rows, models_toml, temp_folder, write_csv,
)


def _package(file: str) -> str:
    if "site-packages/" in file:
        return file.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    return "stdlib"


def bucket(path: list) -> str:
    """The bucket of the time spent at the innermost frame of ``path`` (root first)."""
    names = [(f"{f.class_name}." if f.class_name else "") + f.function for f in path]
    files = [f.file_path or "" for f in path]
    if any(f.function in ("select", "poll", "epoll.poll") for f in path[-3:]) or path[-1].function == "[await]":
        return "idle (waiting for replies)"
    if "AsyncCompletions.create" in names:
        return "openai SDK (inside chat.completions.create)"
    # The profiled script's own frame is the first <module> after pyinstrument's run_path;
    # any <module> below it is an import.
    start = names.index("run_path") if "run_path" in names else 0
    script = next((i for i in range(start, len(names)) if names[i] == "<module>"), len(names))
    if any(n.startswith("_find_and_load") for n in names) or "<module>" in names[script + 1:]:
        modules = [f for n, f in zip(names[script + 1:], files[script + 1:]) if n == "<module>"]
        outside = [f for f in modules if "/orbench/" not in f]
        if outside:  # the first library imported on the way: openai, pandas, ...
            return f"imports: {_package(outside[0])}"
        ours = [f for f in modules if "/orbench/" in f]
        return f"imports: orbench module-level code ({ours[-1].split('/orbench/', 1)[1]})" if ours else "imports: other"
    for name, file in zip(reversed(names), reversed(files)):
        if "/orbench/" in file:  # the innermost frame of ours, unless the event loop is nearer
            return f"orbench: {file.split('/orbench/', 1)[1]} {name}"
        if name.endswith(("._run_once", ".run_forever", "Handle._run")):
            break
    return "other (event loop, asyncio, stdlib)"


def buckets(root) -> dict[str, float]:
    """Self time of every frame of the raw (unprocessed) pyinstrument tree, by bucket."""
    out: dict[str, float] = collections.Counter()
    stack = [(root, [root])]
    while stack:
        node, path = stack.pop()
        child_time = sum(c.time for c in node.children)
        out[bucket(path)] += max(node.time - child_time, 0.0)
        stack.extend((c, path + [c]) for c in node.children)
    return dict(out)


def profile(argv: list[str], name: str, env: dict[str, str] | None = None) -> dict:
    from pyinstrument.session import Session

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    session_path = RESULTS_DIR / f"profile_{name}.pyisession"
    cmd = [PYTHON, "-m", "pyinstrument", "-r", "session", "-o", str(session_path), *argv[1:]]
    subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = subprocess.run([PYTHON, "-m", "pyinstrument", "--load", str(session_path), "-r", "text", "--show-all"],
                          capture_output=True, text=True, check=True).stdout
    (RESULTS_DIR / f"profile_{name}.txt").write_text(text)
    session = Session.load(str(session_path))
    session_path.unlink()
    result = {"command": " ".join(argv[1:]), "duration_s": session.duration, "cpu_s": session.cpu_time,
              "buckets": buckets(session.root_frame(trim_stem=False))}
    (RESULTS_DIR / f"profile_{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def show(result: dict) -> str:
    total = result["duration_s"]
    lines = [f"profiled wall {total:.2f} s, CPU {result['cpu_s']:.2f} s", "| bucket | seconds | share |", "|---|---:|---:|"]
    for k, v in sorted(result["buckets"].items(), key=lambda kv: -kv[1]):
        if v >= 0.005 * total:
            lines.append(f"| {k} | {v:.2f} | {v / total:.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stage", choices=sorted(STAGES), default="4")
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--bare", action="store_true", help="profile the bare AsyncOpenAI loop (benchmarks/loops.py) instead")
    p.add_argument("--cached", type=int, default=0, metavar="N",
                   help="instead: stage 4 over N rows from a warm cache (no server), as in bench_cached.py")
    args = p.parse_args(argv)
    with temp_folder("orbench-profile-") as tmp:
        if args.cached:
            data, inp, mf = cached_stage4_inputs(tmp, args.cached)
            cache = tmp / "responses.sqlite3"
            fill_cache(cache, mf, data)
            out = tmp / "out" / "bench-target_merged_or-bench-80k.csv"
            cmd = [PYTHON, "alignment_checker/gpt3_4_alignment_checker.py", "--model", "bench-target", "--input_file",
                   str(inp), "--output_path", str(out), "--models_file", str(mf), "--cache_path", str(cache)]
            first = profile(cmd, f"cached{args.cached}_warm", env={"ORBENCH_BACKOFF_BASE": "0"})
            print("warm cache, new output:\n" + show(first))
            again = profile(cmd, f"cached{args.cached}_complete", env={"ORBENCH_BACKOFF_BASE": "0"})
            print("\noutput already complete:\n" + show(again))
            return 0
        inp = write_csv(tmp / "input.csv", make_rows(args.rows, with_response=STAGES[args.stage]["responses"]))
        with fake_server(args.latency) as srv:
            mf = models_toml(tmp / "models.toml", srv.base_url)
            out = tmp / "out" / "bench_merged_input.csv"
            if args.bare:
                spec = STAGES[args.stage]
                out.parent.mkdir(parents=True, exist_ok=True)
                cmd = [PYTHON, "benchmarks/loops.py", "bare", "--base_url", srv.base_url, "--models",
                       ",".join(spec["models"]), "--kind", spec["kind"], "--input", str(inp), "--output", str(out),
                       "--concurrency", str(args.concurrency), "--limit", str(args.rows)]
                result = profile(cmd, f"bare{args.stage}_c{args.concurrency}_n{args.rows}")
            else:
                cmd = stage_argv(args.stage, inp, out, mf, args.concurrency, args.rows)
                result = profile(cmd, f"stage{args.stage}_c{args.concurrency}_n{args.rows}")
            shutil.rmtree(out.parent, ignore_errors=True)
        print(show(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
