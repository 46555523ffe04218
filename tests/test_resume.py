"""Resumable output: a torn last record is repaired, a re-run does only what is missing and
retries failed rows, and a run killed with SIGKILL then re-run ends with exactly the rows of
an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.errors import UserError
from orbench.tables.resume import OutputLock, StageOutput, read_rows, repair_torn_tail
from orbench.stages import alignment

from tests.conftest import KEY_ENV, STAGE4, subprocess_env

HEADER = "prompt,is_rejected,response,category\n"


# --------------------------------------------------------------------------- torn tail (unit)


def test_torn_quoted_record_with_embedded_newline_is_cut(tmp_path):
    good = HEADER + '"a, b",False,"line one\nline two",harmful\nc,True,"I\'m ""sorry""",x\n'
    torn = '"how do I\nbake a cake",False,"Mix the'
    p = tmp_path / "m_merged_x.csv"
    p.write_bytes((good + torn).encode())
    assert repair_torn_tail(p) == len(torn.encode())
    assert p.read_bytes() == good.encode()
    _, rows = read_rows(p)
    assert [r["prompt"] for r in rows] == ["a, b", "c"]
    assert rows[0]["response"] == "line one\nline two" and rows[1]["response"] == 'I\'m "sorry"'


@pytest.mark.parametrize("torn", ['d,Fal', '"open quote, no end\n', 'e,True,"done",x'])
def test_other_torn_tails_are_cut(tmp_path, torn):
    good = HEADER + 'a,False,"multi\nline\n\nreply",x\n'
    p = tmp_path / "t.csv"
    p.write_bytes((good + torn).encode())
    repair_torn_tail(p)
    assert p.read_bytes() == good.encode()


def test_complete_file_is_left_alone(tmp_path):
    data = (HEADER + '"q ""quoted""\nacross lines",False,"r",x\n').encode()
    p = tmp_path / "t.csv"
    p.write_bytes(data)
    assert repair_torn_tail(p) == 0 and p.read_bytes() == data


def test_stage_output_repairs_and_reports_done_keys(tmp_path):
    p = tmp_path / "m_merged_x.csv"
    p.write_bytes((HEADER + 'a,False,r,x\n"b\nb",False,r,x\n"torn\n').encode())
    out = StageOutput(p, ["prompt", "is_rejected", "response", "category"], tmp_path / "m_failed_x.csv",
                      ["prompt", "error", "category"], lambda r: r["prompt"])
    try:
        done = out.open()
        assert out.repaired_bytes == len('"torn\n')
        assert done == {"a.0", "b\nb.0"}
    finally:
        out.close()


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    target = tmp_path / "o.csv"
    first = OutputLock(target)
    first.acquire()
    try:
        with pytest.raises(UserError, match="already writing"):
            OutputLock(target).acquire()
    finally:
        first.release()
    OutputLock(target).acquire()  # free again once released


# --------------------------------------------------------------------------- re-runs (in process)


def _run4(models, prompts, out, stage4_args) -> int:
    return alignment.main(stage4_args(models, prompts, out))


@pytest.fixture
def stage4_env(fake_server, write_models, monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, "k")
    monkeypatch.chdir(tmp_path)
    return write_models(fake_server)


def n_chat(srv) -> int:
    return sum(1 for r in srv.requests if r.path.endswith("/chat/completions"))


def test_failed_rows_are_retried_by_the_rerun(fake_server, stage4_env, write_prompts, stage4_args, tmp_path):
    texts = ["one", "two FLAKY", "three", "four", "five FLAKY", "six"]
    prompts = write_prompts(texts)
    out = tmp_path / "out" / "fake_merged_prompts.csv"
    failed = tmp_path / "out" / "fake_failed_prompts.csv"
    fake_server.fail_when_contains, fake_server.fail_status = "FLAKY", 400

    assert _run4(stage4_env, prompts, out, stage4_args) == EXIT_ROWS_FAILED  # done, but rows failed
    assert [r["prompt"] for r in read_rows(out)[1]] == ["one", "three", "four", "six"]
    assert [r["prompt"] for r in read_rows(failed)[1]] == ["two FLAKY", "five FLAKY"]
    first_requests = n_chat(fake_server)

    fake_server.fail_when_contains = None
    assert _run4(stage4_env, prompts, out, stage4_args) == 0
    assert n_chat(fake_server) - first_requests == 2  # only the failed rows were asked again
    assert not failed.exists()  # the stale failed file is removed once no row fails
    info = json.loads(out.with_name("fake_merged_prompts.run.json").read_text())
    assert info["rows_done_before"] == 4 and info["rows_failed"] == 0 and info["complete"] is True

    fresh = tmp_path / "fresh" / "fake_merged_prompts.csv"
    assert _run4(stage4_env, prompts, fresh, stage4_args) == 0
    assert out.read_bytes() == fresh.read_bytes()


def test_rerun_after_a_torn_write_completes_the_file(fake_server, stage4_env, write_prompts, stage4_args, tmp_path):
    texts = ["alpha", "beta,\nwith a newline", 'gamma "quoted"', "delta", "epsilon"]
    prompts = write_prompts(texts)
    full = tmp_path / "full" / "fake_merged_prompts.csv"
    assert _run4(stage4_env, prompts, full, stage4_args) == 0
    data = full.read_bytes()

    # A kill during the write of the third record ("beta..."), cut inside its quoted prompt.
    cut = data.index(b"beta,\n") + len(b"beta,\n")
    out = tmp_path / "killed" / "fake_merged_prompts.csv"
    out.parent.mkdir()
    out.write_bytes(data[:cut])
    before = n_chat(fake_server)
    assert _run4(stage4_env, prompts, out, stage4_args) == 0
    assert out.read_bytes() == data
    assert n_chat(fake_server) - before == 4  # alpha was kept; the torn beta and the rest were asked


# --------------------------------------------------------------------------- SIGKILL (subprocess)


def _prompts_for_kill_test() -> tuple[list[str], list[str]]:
    texts, cats = [], []
    cat_names = ["harmful", "illegal", "privacy"]
    for i in range(300):
        if i % 37 == 0:
            t = "repeat me exactly"  # duplicates must each keep one row
        elif i % 11 == 0:
            t = f'prompt {i}, with "quotes"\nand a second line'
        elif i % 13 == 0:
            t = f"REFUSE prompt {i} ünïcödé ✓"
        else:
            t = f"prompt number {i}"
        texts.append(t)
        cats.append(cat_names[i % 3] if t != "repeat me exactly" else "harmful")
    return texts, cats


@pytest.fixture
def subprocess_fake_server(tmp_path):
    """The fake server as its own process (latency 0.02 s), as a real endpoint would be."""
    port_file = tmp_path / "fake.port"
    log = tmp_path / "fake_requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbench.testing.fake_openai", "--port", "0", "--port-file", str(port_file),
         "--latency", "0.02", "--quiet", "--log", str(log)],
        env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "fake server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{int(port_file.read_text())}/v1", log
    finally:
        proc.terminate()
        proc.wait(10)


def _log_lines(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if '"/v1/chat/completions"' in line)


def _settled_count(log: Path) -> int:
    """Request count once the server has logged whatever the killed run had already sent."""
    last = -1
    while (now := _log_lines(log)) != last:
        last = now
        time.sleep(0.2)
    return now


def test_sigkill_mid_run_then_rerun_gives_exactly_the_uninterrupted_rows(
    subprocess_fake_server, write_models, write_prompts, stage4_args, run_stage, tmp_path
):
    url, log = subprocess_fake_server
    models = write_models(url)
    texts, cats = _prompts_for_kill_test()
    prompts = write_prompts(texts, categories=cats)
    env = {KEY_ENV: "k"}

    def start(output: Path) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, str(STAGE4), *stage4_args(models, prompts, output, concurrency=4)],
            cwd=tmp_path, env=subprocess_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )

    # The uninterrupted reference run goes alongside the run that gets killed.
    reference = tmp_path / "reference" / "fake_merged_prompts.csv"
    ref_proc = start(reference)
    out = tmp_path / "killed" / "fake_merged_prompts.csv"
    proc = start(out)
    try:
        while proc.poll() is None:
            if out.exists() and out.read_bytes().count(b"\n") >= 40:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out.read_bytes().count(b"\n") < 300  # really interrupted
    _, ref_err = ref_proc.communicate(timeout=120)
    assert ref_proc.returncode == 0, ref_err
    ref_header, ref_rows = read_rows(reference)
    assert len(ref_rows) == 300
    requests_before_rerun = _settled_count(log)

    rerun = run_stage(STAGE4, *stage4_args(models, prompts, out, concurrency=4), env=env)
    assert rerun.returncode == 0, rerun.stderr
    header, rows = read_rows(out)
    assert header == ref_header
    assert rows == ref_rows  # same rows, same order, none missing, none twice
    assert out.read_bytes() == reference.read_bytes()

    info = json.loads(out.with_name("fake_merged_prompts.run.json").read_text())
    kept = info["rows_done_before"]
    assert kept >= 30 and info["rows_written"] == 300 and info["complete"] is True
    assert _log_lines(log) - requests_before_rerun == 300 - kept  # only the missing rows were asked


def _sigint(disposition: str):
    """What SIGINT does in the stage's process: Python's default, or ignored, as in a process
    started in the background of a script (`stage ... &`): SIGTERM must stop it all the same."""
    if disposition == "ignored":
        return lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    return lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_sigterm_mid_run_keeps_every_reply_it_received_and_the_rerun_pays_only_for_the_rest(
    subprocess_fake_server, write_models, write_prompts, stage4_args, run_stage, tmp_path, sigint
):
    """SIGTERM (a scheduler's stop, `kill`) ends a stage as Ctrl-C does (exit 130): the rows it
    wrote stay, every reply it received is in the response cache, and the re-run asks the
    endpoint for exactly the prompts whose replies are in neither. Also where the stage's
    process ignores SIGINT (started in the background of a script)."""
    import sqlite3

    url, log = subprocess_fake_server
    models = write_models(url)
    texts, cats = _prompts_for_kill_test()
    prompts = write_prompts(texts, categories=cats)
    out = tmp_path / "stopped" / "fake_merged_prompts.csv"
    args = stage4_args(models, prompts, out, concurrency=4, no_cache=False)
    proc = subprocess.Popen([sys.executable, str(STAGE4), *args], cwd=tmp_path, env=subprocess_env({KEY_ENV: "k"}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=_sigint(sigint))
    try:
        while proc.poll() is None and not (out.exists() and out.read_bytes().count(b"\n") >= 40):
            time.sleep(0.005)
        assert proc.poll() is None, "the run finished before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    _, written = read_rows(out)
    assert 0 < len(written) < 300
    cache_file = Path(os.environ["ORBENCH_CACHE_DIR"]) / "responses.sqlite3"
    with sqlite3.connect(cache_file) as db:
        cached = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    distinct_written = len({r["prompt"] for r in written})
    assert cached >= distinct_written  # no written row's reply is missing from the cache
    if sigint == "ignored":
        return  # the re-run is the same as after any stop (checked with SIGINT as Python sets it)
    requests_before_rerun = _settled_count(log)

    rerun = run_stage(STAGE4, *args, env={KEY_ENV: "k"})
    assert rerun.returncode == 0, rerun.stderr
    _, rows = read_rows(out)
    assert len(rows) == 300
    assert _log_lines(log) - requests_before_rerun == len(set(texts)) - cached  # nothing asked twice
