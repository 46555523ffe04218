"""Exit codes a shell script can act on: 0 every row done, 3 the run finished but some rows
failed (--allow_failures makes it 0), 2 the user's mistake; and run_pipeline.sh stopping at 3."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from orbench.run.cli import EXIT_OK, EXIT_ROWS_FAILED
from orbench.stages import alignment, check_response, generate, moderate, rewrite
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.responders import protocol_responder
from tests.stage_helpers import (  # noqa: F401  (fixtures)
    KEY, KEY_ENV, REPO_ROOT, clone, error_lines, fake_entry, harness, read_csv, run_script, runinfo, write_csv,
    write_models,
)

# (stage main, its input-file option, input rows, a marker that makes the fake server fail a row)
FILE_STAGES = {
    2: (rewrite.main, "--toxic_seed_path", ["--model", "fake"], {"prompt": ["seed one", "seed two BREAK"]}),
    3: (moderate.main, "--input_file_path", ["--moderator_model", "fake"], {"prompt": ["text one", "text BREAK"]}),
    4: (alignment.main, "--input_file", ["--model", "fake"], {"prompt": ["prompt one", "prompt BREAK"]}),
    5: (check_response.main, "--input_file", ["--check_model", "fake"],
        {"prompt": ["q one", "q BREAK"], "response": ["Sure, here it is.", "Sure, here it is."]}),
}


@pytest.mark.parametrize("stage_no", sorted(FILE_STAGES))
def test_failed_rows_exit_3_allow_failures_exit_0_and_a_clean_rerun_exits_0(harness, stage_no):
    main, input_opt, model_args, rows = FILE_STAGES[stage_no]
    srv = harness.serve(protocol_responder, fail_when_contains="BREAK", fail_status=400)
    write_csv(harness.work / "in.csv", rows)
    args = [*model_args, input_opt, "in.csv", "--output_path", "out_merged.csv"]
    assert harness.run(main, *args) == EXIT_ROWS_FAILED
    assert runinfo(harness.work / "out_merged.csv")["rows_failed"] == 1
    asked = len(srv.requests)
    # Same failure, --allow_failures: still one failed row (retried), but exit 0.
    assert harness.run(main, *args, "--allow_failures") == EXIT_OK
    assert len(srv.requests) == asked + 1 and runinfo(harness.work / "out_merged.csv")["rows_failed"] == 1
    # The server recovers: the re-run retries the failed row and every row is done.
    srv.fail_when_contains = None
    assert harness.run(main, *args) == EXIT_OK
    assert runinfo(harness.work / "out_merged.csv")["rows_failed"] == 0


def test_stage1_short_of_its_count_exits_3_or_0_when_allowed(harness):
    harness.serve(lambda request: "no brackets here")  # nothing parseable: stops short
    args = ["--category", "privacy", "--num_toxic_prompts", "3", "--model", "fake", "--max_barren_waves", "1"]
    assert harness.run(generate.main, *args) == EXIT_ROWS_FAILED
    assert harness.run(generate.main, *args, "--allow_failures") == EXIT_OK


def test_stage4_script_exit_codes_as_a_shell_sees_them(clone, tmp_path):
    """Through the real script: 3 with failed rows, 0 with --allow_failures, 0 when all is well,
    2 for a user's mistake."""
    folder = clone / "alignment_checker"
    write_csv(folder / "ok.csv", {"prompt": ["one", "two"]})
    write_csv(folder / "mixed.csv", {"prompt": ["one", "two BREAK"]})
    with FakeOpenAIServer(protocol_responder, fail_when_contains="BREAK", fail_status=400) as srv:
        models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
        run = lambda *a: run_script(clone, "alignment_checker", "--model=fake", f"--models_file={models}", *a)  # noqa: E731
        ok, mixed = run("--input_file=ok.csv"), run("--input_file=mixed.csv")
        allowed = run("--input_file=mixed.csv", "--allow_failures")
        missing = run("--input_file=nope.csv")
    assert ok.returncode == EXIT_OK, ok.stderr
    assert mixed.returncode == EXIT_ROWS_FAILED
    assert "1 row(s) failed" in mixed.stderr and "fake_failed_mixed.csv" in mixed.stderr
    assert allowed.returncode == EXIT_OK, allowed.stderr
    assert missing.returncode == 2 and "input file not found" in missing.stderr


def test_allow_failures_is_an_option_of_every_stage(capsys):
    for main in (generate.main, rewrite.main, moderate.main, alignment.main, check_response.main):
        with pytest.raises(SystemExit):
            main(["--help"])
        assert "--allow_failures" in capsys.readouterr().out


# --------------------------------------------------------------------------- run_pipeline.sh


def test_run_pipeline_stops_at_3_and_says_what_to_rerun(tmp_path):
    """Stage 2 fails every rewrite (the fake server rejects the rewriter's requests): the
    script stops there with exit 3 and one line naming the command, and runs nothing after."""
    marker = "measures whether language models refuse too much"  # in every rewriter request
    with FakeOpenAIServer(protocol_responder, fail_when_contains=marker, fail_status=400) as srv:
        models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
        env = {**os.environ, "ORBENCH_MODELS_FILE": str(models), KEY_ENV: KEY, "PYTHON": sys.executable,
               "GENERATOR_MODEL": "fake", "REWRITER_MODEL": "fake", "MODERATOR_MODELS": "fake",
               "TARGET_MODEL": "fake", "JUDGE_MODEL": "fake", "CATEGORIES": "privacy", "SEEDS_PER_CATEGORY": "2"}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(["bash", str(REPO_ROOT / "run_pipeline.sh"), "--run_dir", str(tmp_path / "run")],
                              env=env, capture_output=True, text=True, timeout=300)
        stages_asked = {r.body["messages"][-1]["content"][:40] for r in srv.requests if isinstance(r.body, dict)}
    assert proc.returncode == EXIT_ROWS_FAILED, proc.stdout + proc.stderr
    stops = [ln for ln in proc.stderr.splitlines() if ln.startswith("run_pipeline.sh: stopped")]
    assert len(stops) == 1, proc.stderr
    assert "mixtral_rewrite_only.py" in stops[0] and "--toxic_seed_path=" in stops[0]
    assert "Re-run this script with the same settings" in stops[0]
    assert "=== 3." not in proc.stdout  # moderation never started
    assert (tmp_path / "run" / "2_rewrites" / "privacy_prompts_rewrite_failed.csv").exists()
    assert len(stages_asked) >= 2  # the generator and the rewriter were both asked
