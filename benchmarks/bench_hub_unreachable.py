"""How long stage 4 takes to say it cannot reach the Hub, and how long the bundled sets take to read.

    python benchmarks/bench_hub_unreachable.py                    # this checkout
    python benchmarks/bench_hub_unreachable.py --checkout DIR     # another checkout's stage 4 (e.g. before a change)

Cases, each timed as a subprocess from start to exit (Python start-up included):
  closed port      HF_ENDPOINT is a loopback port nothing listens on (connection refused at once,
                   as with no route or a failed DNS lookup)
  silent listener  HF_ENDPOINT accepts connections and never answers (a firewall that drops
                   packets, a stuck proxy)
  bundled          --input_file=or-bench-hard-1k and or-bench-toxic, read from the package (the
                   run stops at an unknown model, after the input is read)
Each unreachable case reads or-bench-80k (not bundled) with an empty Hugging Face cache and
must end with exit code 2 and one line. --limit_s caps each run (default 200 s).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE4 = Path("alignment_checker") / "gpt3_4_alignment_checker.py"  # the script imports its own checkout's orbench


def timed(input_file: str, endpoint: str, checkout: Path, limit_s: float) -> tuple[float, str]:
    """(seconds, last stderr line) for stage 4 on input_file, with an empty Hub cache."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HF_HOME": home, "HF_ENDPOINT": endpoint}
        for name in ("HF_HUB_OFFLINE", "PYTHONPATH"):
            env.pop(name, None)
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(checkout / STAGE4), "--model=no-such-model-xyz", f"--input_file={input_file}"],
                                  env=env, cwd=home, capture_output=True, text=True, timeout=limit_s)
        except subprocess.TimeoutExpired:
            return time.perf_counter() - start, f"(still running after {limit_s:.0f} s: stopped)"
        lines = proc.stderr.strip().splitlines()
        return time.perf_counter() - start, f"exit {proc.returncode}: {lines[-1] if lines else ''}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkout", type=Path, default=ROOT, help="the checkout whose stage 4 to time (default: this one)")
    p.add_argument("--limit_s", type=float, default=200.0)
    args = p.parse_args()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    silent = socket.create_server(("127.0.0.1", 0), backlog=64)  # connections queue; nothing answers
    cases = [("closed port", "or-bench-80k", f"http://127.0.0.1:{closed_port}"),
             ("silent listener", "or-bench-80k", f"http://127.0.0.1:{silent.getsockname()[1]}"),
             ("bundled Hard-1K", "or-bench-hard-1k", f"http://127.0.0.1:{closed_port}"),
             ("bundled Toxic", "or-bench-toxic", f"http://127.0.0.1:{closed_port}")]
    print("| case | seconds to exit | how it ended |\n| --- | --- | --- |")
    for name, spec, endpoint in cases:
        seconds, end = timed(spec, endpoint, args.checkout.resolve(), args.limit_s)
        print(f"| {name} | {seconds:.1f} | {end[:150]} |", flush=True)
    silent.close()


if __name__ == "__main__":
    main()
