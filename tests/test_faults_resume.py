"""Nothing lost, nothing duplicated: every stage that calls a model (1 to 5), as a real
subprocess against a fake server on 127.0.0.1:
- SIGKILL at 3 seeded random moments, re-run each time: the final file equals an
  uninterrupted run's, byte for byte;
- two runs on one output at once: the second refuses (lock file).
Server faults (429/500, hangs, a bad key, garbage): tests/test_faults.py.
No test asserts a wall-clock time; subprocess timeouts only guard against hangs.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest

from orbench.testing.fake_openai import FakeOpenAIServer
from tests.fault_responders import (  # noqa: F401  (the work fixture)
    ALL_STAGES,
    GUARD,
    STAGES,
    data_lines,
    expected_rows,
    message_lines,
    read_csv,
    respond,
    run_stage,
    runinfo,
    stage_input,
    start_stage,
    work,
)

SIGKILL_SEED = 20240531


# --------------------------------------------------------------------------------------- SIGKILL

# Rows per run. Stage 1 runs 2,000 rows, stage 4 1,000 (each kill still lands between its 50th
# and 900th row; stage 4 is the heaviest per row, its detector reading every reply). Stages 2, 3 and 5 run 500 (stage 2: 100 seeds x
# 5 rewrites) to keep CI time reasonable on 2 cores: their requests are bigger (few-shot
# templates), and the resume logic under test is the same shared code as stage 4's.
# The cache is on for stages 1 (its replay is what makes a re-run reproduce the samples), 3
# and 5, and off for 2 and 4, so there resume alone brings the run to the same file.
KILL_PLAN = {
    1: dict(rows=2000, cache=True),
    2: dict(rows=100, cache=False),
    3: dict(rows=500, cache=True),
    4: dict(rows=1000, cache=False),
    5: dict(rows=500, cache=True),
}


def kill_moments(seed: int, total: int, count: int = 3) -> list[int]:
    """Row counts at which to kill: distinct, increasing, between 5% and 90% of the run."""
    rng = random.Random(seed)
    return sorted(rng.sample(range(max(1, total // 20), total * 9 // 10), count))


@pytest.mark.parametrize("stage_no", ALL_STAGES)
def test_sigkill_and_rerun_gives_the_uninterrupted_file(stage_no, tmp_path, work, write_models):
    stage = STAGES[stage_no]
    plan = KILL_PLAN[stage_no]
    with FakeOpenAIServer(respond) as srv:
        models = write_models(srv)
        inp = stage_input(stage_no, work, plan["rows"])

        def args(out: Path, cache: Path) -> list[str]:
            extra = [] if not plan["cache"] else ["--cache_path", str(cache)]
            return stage.args(input_file=inp, output=out, models_file=models, concurrency=8, rows=plan["rows"],
                              no_cache=not plan["cache"], extra=extra)

        ref_out = tmp_path / "ref" / stage.output_name
        ref = run_stage(stage, args(ref_out, tmp_path / "ref_cache.sqlite"), work)
        assert ref.returncode == 0, ref.stderr
        total = data_lines(ref_out)
        assert total == expected_rows(stage_no, plan["rows"])

        out = tmp_path / "killed" / stage.output_name
        kill_args = args(out, tmp_path / "kill_cache.sqlite")
        seed = SIGKILL_SEED + stage_no
        moments = kill_moments(seed, total)
        print(f"\n{stage.id}: SIGKILL seed={seed} moments (rows on disk)={moments} of {total}")
        seen = []
        for k in moments:
            proc = start_stage(stage, kill_args, work, tmp_path / "killed.log")
            try:
                deadline = time.monotonic() + GUARD
                while data_lines(out) < k and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.002)
                os.kill(proc.pid, signal.SIGKILL)
            finally:
                proc.wait()
            seen.append(data_lines(out))
            assert proc.returncode == -signal.SIGKILL, (
                f"{stage.id}: the run ended (code {proc.returncode}) before it could be killed at row {k}; "
                f"seed={seed} moments={moments}\n{(tmp_path / 'killed.log').read_text()[-2000:]}")
        print(f"{stage.id}: rows on disk after each kill={seen}")
        final = run_stage(stage, kill_args, work)
        why = f"{stage.id}: seed={seed} moments={moments} rows on disk at each kill={seen}"
        assert final.returncode == 0, f"{why}\n{final.stderr}"
        assert "Traceback" not in final.stderr, why
        assert out.read_bytes() == ref_out.read_bytes(), why  # same rows, same order, none twice
        rows = read_csv(out)
        assert len(rows) == total and len({tuple(r.values()) for r in rows}) == total, why
        failed = stage.failed_path(out)
        if failed is not None:
            assert not failed.exists(), why  # no row failed: no failed file
        info = runinfo(out)
        assert info["complete"] is True, why
        if stage_no != 1:
            # Resume did the work: the last run found finished rows on disk.
            assert info["rows_done_before"] > 0 and info["rows_failed"] == 0, why


def test_sigkill_stage1_without_cache_keeps_its_rows_and_reaches_the_target(tmp_path, work, write_models):
    """Without the cache there is nothing to replay: a re-run keeps the prompts on disk and
    asks for new samples (the fake server, like vLLM, gives the same prompts for a seed
    again, so asking from sample 0 would only bring duplicates). The file is not the
    uninterrupted one (its order follows the runs), but nothing is lost and none is twice."""
    stage, target = STAGES[1], 2000
    with FakeOpenAIServer(respond) as srv:
        models = write_models(srv)
        out = tmp_path / "killed" / stage.output_name
        args = stage.args(input_file=None, output=out, models_file=models, concurrency=8, rows=target)
        seed = SIGKILL_SEED
        moments = kill_moments(seed, target)
        print(f"\nstage1 --no_cache: SIGKILL seed={seed} moments (rows on disk)={moments} of {target}")
        kept: set[str] = set()
        for k in moments:
            proc = start_stage(stage, args, work, tmp_path / "killed.log")
            try:
                deadline = time.monotonic() + GUARD
                while data_lines(out) < k and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.002)
                os.kill(proc.pid, signal.SIGKILL)
            finally:
                proc.wait()
            assert proc.returncode == -signal.SIGKILL, f"seed={seed} moments={moments}"
            kept |= {r["prompt"] for r in read_csv(out)}
        final = run_stage(stage, args, work)
    why = f"seed={seed} moments={moments}"
    assert final.returncode == 0, f"{why}\n{final.stderr}"
    prompts = [r["prompt"] for r in read_csv(out)]
    assert len(prompts) == target and len(set(prompts)) == target, why
    assert kept <= set(prompts), why  # every prompt on disk at a kill survives


# --------------------------------------------------------------------------------------- lock


class Gate:
    """A responder that holds every request until the test opens the gate."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.arrived = threading.Event()  # a request is waiting (the server records it only once answered)
        self.opened = threading.Event()

    async def __call__(self, request):
        self.arrived.set()
        while not self.opened.is_set():
            await asyncio.sleep(0.01)
        return self.inner(request)


@pytest.mark.parametrize("stage_no", ALL_STAGES)
def test_second_run_on_the_same_output_refuses(stage_no, tmp_path, work, write_models):
    stage = STAGES[stage_no]
    n = 40
    gate = Gate(respond)
    with FakeOpenAIServer(gate) as srv:
        models = write_models(srv)
        inp = stage_input(stage_no, work, n)
        out = tmp_path / "out" / stage.output_name
        args = stage.args(input_file=inp, output=out, models_file=models, rows=n)
        first = start_stage(stage, args, work, tmp_path / "first.log")
        try:
            # Once the first run's requests reach the server, it holds the lock.
            assert gate.arrived.wait(timeout=GUARD), (tmp_path / "first.log").read_text()
            before = out.read_bytes()
            second = run_stage(stage, args, work)
            assert out.read_bytes() == before  # the second run wrote nothing
        finally:
            gate.opened.set()
            first.wait(timeout=GUARD)
    assert second.returncode == 2, second.stderr
    assert "Traceback" not in second.stderr
    lines = message_lines(second.stderr)
    assert len(lines) == 1 and "another run is already writing" in lines[0], lines
    assert str(out) + ".lock" in lines[0]
    assert first.returncode == 0, (tmp_path / "first.log").read_text()
    rows = read_csv(out)
    assert len(rows) == expected_rows(stage_no, n)
    assert len({tuple(r.values()) for r in rows}) == len(rows)  # nothing twice
    assert runinfo(out)["complete"] is True
