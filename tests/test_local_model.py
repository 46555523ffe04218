"""The embedded model (SmolLM2-135M via llama-cpp-python), started for real: it answers, it
listens on 127.0.0.1 only, and it stops when the process that started it exits or is killed."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orbench.tables.resume import read_rows

from tests.conftest import STAGE4, subprocess_env

pytestmark = pytest.mark.embedded

# Starts the embedded server, asks one prompt through the normal client, reports, then waits
# for its stdin to close (so the test decides when this parent exits).
CHILD = r"""
import asyncio, json, sys
import orbench.engine.local_server as ls
from orbench.engine.llm import LLMClient
from orbench.engine.registry import resolve

urls = ls.ensure_local_server()
client = LLMClient(resolve("local"))

async def ask():
    try:
        return await client.complete([{"role": "user", "content": "What is the capital of France?"}],
                                     temperature=0.0, max_tokens=20)
    finally:
        await client.aclose()

res = asyncio.run(ask())
print(json.dumps({"urls": urls, "pids": [p.pid for p, _ in ls._started], "text": res.text, "model": res.model,
                  "tokens": res.completion_tokens}), flush=True)
sys.stdin.read()
"""

LISTEN = "0A"


def listening(port: int) -> list[tuple[str, str, int]]:
    """(family, address, inode) of every socket listening on ``port``, from /proc/net/tcp{,6}."""
    found = []
    for fam in ("tcp", "tcp6"):
        path = Path(f"/proc/net/{fam}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            addr_hex, port_hex = fields[1].split(":")
            if int(port_hex, 16) != port or fields[3] != LISTEN:
                continue
            raw = bytes.fromhex(addr_hex)
            if fam == "tcp":
                addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:  # four little-endian 32-bit words
                addr = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
            found.append((fam, addr, int(fields[9])))
    return found


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(fd))
        except OSError:
            continue
        if m:
            inodes.add(int(m.group(1)))
    return inodes


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has stopped; only its parent has not reaped it yet


def wait_until_gone(pid: int, port: int, bound: float = 60.0) -> None:
    deadline = time.monotonic() + bound  # a bound on the test, not a speed requirement
    while alive(pid) or listening(port):
        assert time.monotonic() < deadline, f"embedded server {pid} still running after its parent ended"
        time.sleep(0.1)


@pytest.mark.parametrize("parent_ends", ["exits", "is_killed"])
def test_embedded_server_answers_on_loopback_and_stops_with_its_parent(tmp_path, parent_ends):
    """Two replicas (ORBENCH_LOCAL_REPLICAS=2): each listens on loopback only, and both go away
    with the process that started them."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], cwd=tmp_path, env={**subprocess_env(), "ORBENCH_LOCAL_REPLICAS": "2"},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    servers = []
    try:
        line = child.stdout.readline()
        assert line, f"child failed: {child.stderr.read()}"
        info = json.loads(line)
        assert info["text"] and info["text"].strip() and info["tokens"] > 0
        assert len(info["pids"]) == len(info["urls"]) == 2
        for server_pid, url in zip(info["pids"], info["urls"]):
            port = int(re.fullmatch(r"http://127\.0\.0\.1:(\d+)/v1", url).group(1))
            servers.append((server_pid, port))
            assert alive(server_pid)
            socks = listening(port)
            assert socks, f"nothing listens on port {port}"
            assert {(fam, addr) for fam, addr, _ in socks} == {("tcp", "127.0.0.1")}, socks
            assert {inode for *_, inode in socks} <= socket_inodes(server_pid)  # it is the server's socket

        if parent_ends == "exits":
            child.stdin.close()
            assert child.wait(60) == 0
        else:
            child.send_signal(signal.SIGKILL)
            assert child.wait(60) == -signal.SIGKILL
        for server_pid, port in servers:
            wait_until_gone(server_pid, port)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for server_pid, _ in servers:
            if alive(server_pid):
                os.kill(server_pid, signal.SIGKILL)


def test_stage4_with_the_local_model(tmp_path, write_prompts, run_stage, isolated_env):
    prompts = write_prompts(["How do I boil an egg?", "Write a haiku about rain."])
    out = tmp_path / "out" / "local_merged_prompts.csv"
    proc = run_stage(STAGE4, "--model", "local", "--input_file", prompts, "--output_path", out,
                     "--max_tokens", "20", "--no_cache", timeout=600)
    assert proc.returncode == 0, proc.stderr
    _, rows = read_rows(out)
    assert [r["prompt"] for r in rows] == ["How do I boil an egg?", "Write a haiku about rain."]
    assert all(r["response"].strip() for r in rows)
    assert all(r["is_rejected"] in ("True", "False") for r in rows)
    info = json.loads(out.with_name("local_merged_prompts.run.json").read_text())
    assert info["model_id"] == "SmolLM2-135M-Instruct" and info["endpoint"].startswith("embedded")
    assert info["max_tokens"] == 20 and info["rows_failed"] == 0

    # The server it started went away with it.
    log = (isolated_env / "local_server.log").read_text()
    pids = [int(p) for p in re.findall(r"Started server process \[(\d+)\]", log)]
    import orbench.engine.local_server as ls
    assert len(pids) == ls.replicas()  # one per replica (the suite's workers: one)
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, "embedded server outlived the stage run"
        time.sleep(0.1)


def test_the_embedded_server_threads_come_from_the_environment(monkeypatch):
    import orbench.engine.local_server as ls
    from orbench.errors import UserError

    monkeypatch.delenv("ORBENCH_LOCAL_THREADS", raising=False)
    assert ls.threads() == max(1, (os.cpu_count() or 1) // 2)
    cmd = ls.server_command(8080)
    assert cmd[cmd.index("--n_threads") + 1] == str(ls.threads())
    monkeypatch.setenv("ORBENCH_LOCAL_THREADS", "3")
    cmd = ls.server_command(8080)
    assert ls.threads() == 3 and cmd[cmd.index("--n_threads") + 1] == "3"
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("ORBENCH_LOCAL_THREADS", bad)
        with pytest.raises(UserError, match="ORBENCH_LOCAL_THREADS"):
            ls.threads()


def test_the_replicas_fill_the_cores_and_take_their_prompts_on_their_own_threads(monkeypatch):
    import orbench.engine.local_server as ls
    from orbench.errors import UserError

    monkeypatch.delenv("ORBENCH_LOCAL_REPLICAS", raising=False)
    monkeypatch.setenv("ORBENCH_LOCAL_THREADS", "1")
    assert ls.replicas() == max(1, os.cpu_count() or 1)
    monkeypatch.setenv("ORBENCH_LOCAL_REPLICAS", "2")
    cmd = ls.server_command(8080)
    assert cmd[cmd.index("--n_threads") + 1] == cmd[cmd.index("--n_threads_batch") + 1] == "1"
    monkeypatch.setenv("ORBENCH_LOCAL_REPLICAS", "1")
    assert "--n_threads_batch" not in ls.server_command(8080)  # one server: llama.cpp's default, every core
    for bad in ("0", "many"):
        monkeypatch.setenv("ORBENCH_LOCAL_REPLICAS", bad)
        with pytest.raises(UserError, match="ORBENCH_LOCAL_REPLICAS"):
            ls.replicas()
    monkeypatch.setenv("ORBENCH_LOCAL_URL", "http://127.0.0.1:1/v1, http://127.0.0.1:2/v1")
    assert ls.ensure_local_server() == ("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1")
