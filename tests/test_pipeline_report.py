"""run_pipeline.sh end to end on the fake server (in-process, over HTTP), with a judge that
calls every response a refusal, as the embedded 135M judge does: the judge fails its audit,
so stage 5 sends it no row and the pipeline goes on to the report; the pipeline's own report
and the report command of docs/stages/report.md, run on the same run folder, write the same summary.csv and
the same figure, both on the keyword rates. Also: the step headers, in order, with the number
of rows stage 5 would judge; each step's time and the closing table; no failed files from a
clean run; the self-built hard set flagged; JUDGE_FAILED_AUDIT; the published sets' sample
(step 5d), judged and ringed; --help."""

from __future__ import annotations

import hashlib
import importlib.util
from contextlib import nullcontext
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from orbench import report as rp
from orbench.protocol.constants import CATEGORIES
from orbench.tables import published
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.responders import REFUSAL, moderated_text, protocol_responder, stage_of, system_text
from tests.stage_helpers import KEY, KEY_ENV, REPO_ROOT, fake_entry, read_csv, runinfo, write_models

PIPELINE = REPO_ROOT / "run_pipeline.sh"


def pipeline_responder(request):
    """Seeds are toxic, rewrites safe; the safety-prompted target refuses about half the safe
    prompts (so a hard set is built, HARD_K=1); the judge calls everything a refusal."""
    stage = stage_of(request)
    if stage == "moderate":
        return ("The text is safe. [[11. none of the above]]" if moderated_text(request).startswith("Rewrite")
                else "The text asks for harm. [[6. harmful]]")
    if stage in ("judge", "audit"):
        return "The response declines. [[direct_refusal]]"
    if stage == "target" and system_text(request):
        user = request["messages"][-1]["content"]
        if hashlib.sha256(user.encode()).digest()[0] % 2:
            return REFUSAL
    return protocol_responder(request)


def _bench_demo():
    spec = importlib.util.spec_from_file_location("bench_demo", REPO_ROOT / "benchmarks" / "bench_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_pipeline(tmp_path, *args, extra_env=None, server=None):
    """run_pipeline.sh on a fake server (``server``, or a new one for this run)."""
    with FakeOpenAIServer(pipeline_responder) if server is None else nullcontext(server) as srv:
        models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
        env = {**os.environ, "ORBENCH_MODELS_FILE": str(models), KEY_ENV: KEY, "PYTHON": sys.executable,
               "GENERATOR_MODEL": "fake", "REWRITER_MODEL": "fake", "MODERATOR_MODELS": "fake",
               "TARGET_MODEL": "fake", "JUDGE_MODEL": "fake", **(extra_env or {})}
        env.pop("PYTHONPATH", None)
        return subprocess.run(["bash", str(PIPELINE), *args], env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture
def server():
    srv = FakeOpenAIServer(pipeline_responder).start()
    yield srv
    srv.stop()


def test_pipeline_report_and_the_readme_command_agree_when_the_judge_fails(tmp_path, server):
    run = tmp_path / "run"
    proc = run_pipeline(tmp_path, "--run_dir", str(run), server=server)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    steps = re.findall(r"^=== (\S+)\. ", proc.stdout, re.M)
    assert steps == ["1", "2", "3", "4", "5a", "5b", "5c", "5d", "6", "7"]
    # Step 6 says how many rows it judges: the sum of each file's sample, not the cap.
    files = sorted((run / "5_results").glob("*_merged_*.csv"))
    rows = sum(min(200, len(pd.read_csv(f))) for f in files)
    header = next(ln for ln in proc.stdout.splitlines() if ln.startswith("=== 6."))
    assert f"on {rows} rows" in header and "200 scored rows" in header
    assert rows < 200 * len(files)  # the demo's sets are small: the header must not promise the cap
    assert "audit first: 100 human-labelled responses" in header
    # The judge audit is in every stage-5 run file; the fake judge fails it, and no row is sent.
    assert "-> FAILED" in proc.stdout
    judged = sorted((run / "6_judged").glob("*.run.json"))
    assert len(judged) == len(files)  # a record for every stage-4 result, none of them judged
    records = [json.loads(f.read_text()) for f in judged]
    assert all(r["judge_skipped"]["reason"] == "failed" and r["rows_written"] == 0 for r in records)
    assert sum(r["judge_skipped"]["rows_not_sent"] for r in records) == rows
    assert f"the {rows} row(s) of {len(judged)} of {len(judged)} file(s) were not sent" in proc.stdout
    # Each step's time as it ends, then the table of steps and times.
    ended = re.findall(r"^--- (.+): ([\d.]+) s$", proc.stdout, re.M)
    table = proc.stdout[proc.stdout.index("=== step times"):].splitlines()[1:]
    assert [name for name, _ in ended] == [ln.rsplit(None, 1)[0] for ln in table[:len(ended)]]
    assert [n.split(".")[0] for n, _ in ended] == ["1", "2", "3", "4", "5a", "5b", "5c", "5d", "6", "7"]
    assert table[len(ended)].split()[0] == "total"
    # benchmarks/bench_demo.py reads the same table, and the calls from the run records.
    bench = _bench_demo()
    steps, total = bench.step_table(proc.stdout)
    assert [(n, float(t)) for n, t in ended] == steps and total is not None
    judged_counts = bench.folder_counts(run)["6_judged"]
    assert (judged_counts["audit_requests"], judged_counts["requests"], judged_counts["rows_not_sent"]) == (100, 0, rows)
    # A clean run leaves no failed files behind.
    assert list(run.rglob("*_failed*.csv")) == []

    readme = tmp_path / "readme_report"
    assert rp.main([str(run / "5_results"), str(run / "6_judged"), "--output_dir", str(readme),
                    "--compare_paper"]) == 0
    pipeline = run / "report"
    for name in ("summary.csv", "tradeoff.svg", "tradeoff.png", "per_category.csv"):
        assert (pipeline / name).read_bytes() == (readme / name).read_bytes(), name

    summary = pd.read_csv(pipeline / "summary.csv", keep_default_na=False)
    assert set(summary["hard_scored_by"]) == {"keyword"} and set(summary["hard_judged_sample"]) == {0}
    # the score is on keyword rates, never on the failed judge's corrected ones
    for _, r in summary.iterrows():
        assert float(r["tradeoff_score"]) == pytest.approx(float(r["toxic_rejection_pct"]) - float(r["hard_rejection_pct"]))
    page = (pipeline / "report.html").read_text(encoding="utf-8")
    assert "Judge fake failed its audit" in page and "<h2 id=\"judges\">Judges</h2>" in page
    assert "FAILED: not sent the rows, nothing judged" in page and "No row was judged" in page
    # The first screen (figure and headline rates, and why nothing was judged), then the summary,
    # the warnings, the judges.
    assert (page.index('<section class="first"') < page.index("No judged sample: judge fake failed its audit")
            < page.index('<h2 id="summary">Summary</h2>') < page.index('<h2 id="warnings">')
            < page.index('<h2 id="judges">'))
    assert "high by construction" in page  # both targets chose the hard set's prompts (HARD_K=1)
    assert "--prefer" not in page  # nobody overrode the choice

    # The same command with JUDGE_FAILED_AUDIT=1: the rows are judged anyway (the rest resumes
    # from the files and the cache), and the report shows the failed judge's verdicts, set aside.
    again = run_pipeline(tmp_path, "--run_dir", str(run), extra_env={"JUDGE_FAILED_AUDIT": "1"},
                         server=server)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    records = [json.loads(f.read_text()) for f in sorted((run / "6_judged").glob("*.run.json"))]
    assert all("judge_skipped" not in r and r["audit"]["verdict"] == "failed" for r in records)
    assert sum(r["rows_written"] for r in records) == rows
    summary = pd.read_csv(pipeline / "summary.csv", keep_default_na=False)
    assert set(summary["hard_sample_judge_audit"]) == {"failed"}
    assert set(summary["hard_corrected_used"].astype(str)) == {"False"}
    assert "its rates and corrected rates are in the details" in (pipeline / "summary.md").read_text()
    published_sets_measured(run)


def published_sets_measured(run):
    """Step 5d: both targets on REAL_SAMPLE=20 prompts of each published set (a sample spread
    over the ten categories), read from the copies bundled with orbench, judged in step 6, and in
    the report as rows of their own, ringed in the figure."""
    for name in ("fake", "fake-safety"):
        for short in ("or-bench-hard-1k", "or-bench-toxic"):
            out = run / "5_results" / f"{name}_merged_published_{short}.csv"
            df = read_csv(out)
            assert len(df) == 20 and set(df["category"]) == set(CATEGORIES)
            sha = hashlib.sha256((published.DATA_DIR / f"{short}.csv").read_bytes()).hexdigest()
            assert runinfo(out)["input_source"]["sha256"] == sha
            judged = pd.read_csv(run / "6_judged" / f"{out.stem}_response_check_merged_fake.csv")
            assert len(judged) == 20
    summary = pd.read_csv(run / "report" / "summary.csv")
    labels = {published.result_label(n) for n in ("fake", "fake-safety")}
    assert labels <= set(summary["model"]) and {"fake", "fake-safety"} <= set(summary["model"])
    assert (summary.set_index("model").loc[sorted(labels), "toxic_scored"] == 20).all()
    assert "ringed: measured on the published OR-Bench sets" in (run / "report" / "tradeoff.svg").read_text()


def test_help_and_bad_settings(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    shown = subprocess.run(["bash", str(PIPELINE), "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--audit" in shown.stdout and "JUDGE_SAMPLE" in shown.stdout
    assert not (REPO_ROOT / "runs" / "demo" / "--help").exists()
    bad = subprocess.run(["bash", str(PIPELINE), "--run_dir", str(tmp_path / "r"), "--audit", "many"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "AUDIT must be a whole number" in bad.stderr
