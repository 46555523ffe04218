"""orbench.commands.chain, which runs a pipeline step's commands in one Python process: each
command's files, run record and exit code are what it gives on its own; a reply one command
received is not paid for again by the next; the modes stop or go on as run_pipeline.sh needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orbench.commands import chain
from tests.responders import protocol_responder
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.stage_helpers import REPO_ROOT, fake_entry, read_csv, runinfo, stage_env, write_csv, write_models

STAGE4 = str(REPO_ROOT / "alignment_checker" / "gpt3_4_alignment_checker.py")


def _chain(*words, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "orbench.commands.chain", "--name", "test-chain", "--", *words],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _stage4(models, inp, out, *extra):
    return ["stage", STAGE4, "--model=fake", f"--input_file={inp}", f"--output_path={out}",
            f"--models_file={models}", *extra]


def test_two_stage_runs_in_one_chain_write_what_each_writes_alone_and_pay_once(tmp_path):
    inp = write_csv(tmp_path / "q.csv", {"prompt": [f"How do I store chemical {i} at home?" for i in range(6)],
                                         "category": ["harmful"] * 6})
    with FakeOpenAIServer(protocol_responder) as srv:
        models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
        env = stage_env()
        alone = subprocess.run([sys.executable, *_stage4(models, inp, tmp_path / "alone.csv", "--no_cache")[1:]],
                               env=env, capture_output=True, text=True, timeout=300)
        assert alone.returncode == 0, alone.stderr
        asked_before = len(srv.requests)
        proc = _chain(*_stage4(models, inp, tmp_path / "a.csv"), ":::",
                      *_stage4(models, inp, tmp_path / "b.csv"), ":::",
                      "check", "-m", "orbench.tables.usable", "results", "step", "fake", str(tmp_path / "b.csv"),
                      env=env)
        asked = len(srv.requests) - asked_before
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert asked == 6  # the second command read the first one's replies from the cache
    cols = ["prompt", "is_rejected", "response", "category"]
    for name in ("a.csv", "b.csv"):
        assert read_csv(tmp_path / name)[cols].equals(read_csv(tmp_path / "alone.csv")[cols])
    assert (runinfo(tmp_path / "a.csv")["cached"], runinfo(tmp_path / "b.csv")["cached"]) == (0, 6)


def test_modes_stop_or_go_on_with_the_code_that_stopped_them(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text("import sys\nprint('ran', sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n")
    s = str(script)
    went_on = _chain("short", s, "3", ":::", "stage", s, "0")
    assert went_on.returncode == 0
    assert "stopped short; continuing" in went_on.stdout and "ran ['0']" in went_on.stdout
    stopped = _chain("stage", s, "3", ":::", "stage", s, "0")
    assert stopped.returncode == 3 and "ran ['0']" not in stopped.stdout
    lines = [ln for ln in stopped.stderr.splitlines() if ln.startswith("test-chain: stopped")]
    assert len(lines) == 1 and f"{s} 3" in lines[0] and "Re-run this script" in lines[0]
    assert _chain("stage", s, "2", ":::", "stage", s, "0").returncode == 2
    failed_check = _chain("check", s, "3", ":::", "stage", s, "0")
    assert failed_check.returncode == 3 and "ran ['0']" not in failed_check.stdout
    assert "test-chain: stopped" not in failed_check.stderr  # a check says why itself
    assert _chain("short", s, "5").returncode == 5


@pytest.mark.parametrize("words", [["stage"], ["run", "x.py"], ["check", "-m"]])
def test_a_malformed_chain_is_one_line_and_exit_2(words):
    proc = _chain(*words)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "test-chain: error:" in proc.stderr


def test_split_and_a_text_exit_code():
    assert chain.split(["stage", "a.py", "-x", ":::", ":::", "check", "-m", "m", "y"]) == [
        ("stage", ["a.py", "-x"]), ("check", ["-m", "m", "y"])]
    assert chain.split([]) == []


def test_a_script_that_exits_with_text_prints_it_and_gives_1(tmp_path, capsys):
    script = tmp_path / "says.py"
    script.write_text("import sys\nsys.exit('no input file')\n")
    assert chain.run_one([str(script)]) == 1
    assert "no input file" in capsys.readouterr().err
