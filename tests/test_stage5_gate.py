"""The audit gates the judge (orbench/judge_audit/gate.py), through the fake server over HTTP:
stage 5 audits first; a judge that fails is not sent the rows (none reaches the server), the
run record says why and the exit code is 0; --judge_failed_audit judges them anyway; a judge
that passes judges them as before; a re-run never pays for the audit twice; an audit left
undecided by failed calls holds the rows back (exit 3) until the same command finishes it;
--audit 0 gates nothing; in batch mode the audit's batch goes first, alone, and the rows'
batch follows only for a judge that passes."""

from __future__ import annotations

import json

import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.judge_audit import auditset
from orbench.stages.check_response import main
from orbench.testing.fake_openai import Status
from tests.responders import ENSEMBLE_IDS, AuditCallsDown, judged_pair, passing_judge, stage_of
from tests.stage_helpers import chat_requests, error_lines, harness, read_csv, runinfo, write_csv  # noqa: F401

N_ROWS = 12
OUT = "r_response_check_merged_fake.csv"
REFUSAL = "The response declines. [[direct_refusal]]"


def stage4(work, n=N_ROWS):
    """A stage-4 result: half answers, half refusals (none of them audit rows)."""
    prompts = [f"How do I do task number {i}?" for i in range(n)]
    responses = ["I'm sorry, but I can't help with that." if i % 2 else f"Here is how to do task {i}." for i in range(n)]
    return write_csv(work / "r.csv", {"prompt": prompts, "response": responses, "category": ["harmful"] * n,
                                      "is_rejected": [str(bool(i % 2)) for i in range(n)]})


def always_refusal(request):
    """Calls everything a refusal, as the embedded 135M judge does: agreement 50%, kappa 0."""
    return REFUSAL


def row_requests(srv) -> list:
    return chat_requests(srv, "judge")


def test_a_judge_that_fails_its_audit_is_not_sent_the_rows(harness, capsys):
    srv = harness.serve(always_refusal)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=20", "--sample=8") == 0
    assert len(chat_requests(srv, "audit")) == 20 and row_requests(srv) == []  # no row reached the server
    info = runinfo(harness.work / OUT)
    skipped = info["judge_skipped"]
    assert info["audit"]["verdict"] == "failed" and skipped["reason"] == "failed"
    assert skipped["rows_not_sent"] == 8 and skipped["judge"] == "fake"
    assert skipped["kappa"]["value"] == 0.0 and skipped["agreement_pct"]["value"] == 50.0
    assert info["complete"] is True and info["rows_written"] == 0 and info["requests"] == 0
    assert info["sample_size"] == 8  # what would have been judged
    assert read_csv(harness.work / OUT).empty  # the header only: nothing was judged
    err = error_lines(capsys.readouterr().err)
    line = [ln for ln in err if ln.startswith("stage 5:")]
    assert len(line) == 1 and "failed its audit" in line[0] and "kappa 0.00" in line[0]
    assert "the 8 row(s) to judge were not sent" in line[0] and "--judge_failed_audit" in line[0]

    # The same command again: the audit comes from the cache, and nothing is sent.
    before = len(srv.requests)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=20", "--sample=8") == 0
    assert len(srv.requests) == before and runinfo(harness.work / OUT)["audit"]["cached"] == 20

    # The override judges them, and pays for nothing twice: the audit is still cached.
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=20", "--sample=8",
                       "--judge_failed_audit") == 0
    assert len(row_requests(srv)) == 8 and len(chat_requests(srv, "audit")) == 20
    info = runinfo(harness.work / OUT)
    assert "judge_skipped" not in info and info["audit"]["verdict"] == "failed" and info["audit"]["cached"] == 20
    assert info["rows_written"] == 8 and set(read_csv(harness.work / OUT)["answer_category"]) == {"direct_refusal"}


def test_the_override_judges_every_row_from_the_start(harness):
    srv = harness.serve(always_refusal)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10", "--judge_failed_audit") == 0
    assert len(row_requests(srv)) == N_ROWS and len(chat_requests(srv, "audit")) == 10
    info = runinfo(harness.work / OUT)
    assert info["audit"]["verdict"] == "failed" and "judge_skipped" not in info and info["rows_written"] == N_ROWS


def test_a_judge_that_passes_is_audited_first_then_judges_the_rows(harness):
    srv = harness.serve(passing_judge)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10") == 0
    kinds = [stage_of(r.body) for r in chat_requests(srv)]
    assert kinds == ["audit"] * 10 + ["judge"] * N_ROWS  # the audit first, then every row
    info = runinfo(harness.work / OUT)
    assert info["audit"]["verdict"] == "passed" and "judge_skipped" not in info
    assert info["requests"] == N_ROWS and info["audit"]["requests"] == 10  # each counted once, apart
    assert info["audit"]["completion_tokens"] > 0 and info["completion_tokens"] > 0
    assert len(read_csv(harness.work / OUT)) == N_ROWS


def test_a_resumed_run_never_pays_for_the_audit_twice(harness):
    down = {"on": True}

    def flaky_rows(request):  # the rows' judge fails on some rows in the first run
        if down["on"] and stage_of(request) == "judge" and judged_pair(request)[0].endswith(("3?", "7?")):
            return Status(400, message="judge down for this row")
        return passing_judge(request)

    srv = harness.serve(flaky_rows)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10") == EXIT_ROWS_FAILED
    assert len(chat_requests(srv, "audit")) == 10 and len(read_csv(harness.work / OUT)) == N_ROWS - 2
    down["on"] = False
    sent = len(srv.requests)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10") == 0
    new = srv.requests[sent:]
    assert [stage_of(r.body) for r in new] == ["judge", "judge"]  # the two failed rows, no audit call
    info = runinfo(harness.work / OUT)
    assert info["audit"]["requests"] == 0 and info["audit"]["cached"] == 10 and info["requests"] == 2
    assert len(read_csv(harness.work / OUT)) == N_ROWS


def test_an_undecided_audit_holds_the_rows_back_until_it_is_finished(harness, capsys):
    flaky_audit = AuditCallsDown(passing_judge, auditset.subset(10)[:3])
    srv = harness.serve(flaky_audit)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10") == EXIT_ROWS_FAILED
    assert row_requests(srv) == []  # 7 of 10 right cannot tell pass from fail: nothing sent
    info = runinfo(harness.work / OUT)
    assert info["audit"]["verdict"] == info["audit"]["settled"] == "incomplete"
    assert info["judge_skipped"]["reason"] == "incomplete" and info["complete"] is False
    err = capsys.readouterr().err
    assert "audit is incomplete (3 of 10 calls failed" in err and "run the same command again" in err
    flaky_audit.down = False
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10") == 0
    assert len(chat_requests(srv, "audit")) == 10 + 3 and len(row_requests(srv)) == N_ROWS
    info = runinfo(harness.work / OUT)
    assert info["audit"]["verdict"] == "passed" and "judge_skipped" not in info and info["complete"] is True


def test_failed_audit_calls_that_cannot_save_a_failing_judge_do_not_hold_it(harness):
    failing = {(i.prompt, i.response) for i in auditset.subset(20)[:2]}

    def mostly_refusal(request):
        return Status(400, message="down") if judged_pair(request) in failing else REFUSAL

    srv = harness.serve(mostly_refusal)
    stage4(harness.work)
    # Exit 3: two audit calls failed (the same command retries them); the judge fails whatever they say.
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=20") == EXIT_ROWS_FAILED
    info = runinfo(harness.work / OUT)
    assert info["audit"]["verdict"] == "incomplete" and info["audit"]["settled"] == "failed"
    assert info["judge_skipped"]["reason"] == "failed" and info["complete"] is True and row_requests(srv) == []
    # The report calls it failed too, and says why an unfinished audit already decides.
    from orbench import report as rp

    judge = rp.build_report([harness.work / "r.csv", harness.work / OUT], datasets={"r*.csv": "hard"}).judges["fake"]
    assert judge.status == "failed" and judge.nothing_judged
    assert judge.reasons[0] == "it fails whatever its 2 failed audit call(s) would say"


def test_an_ensemble_is_gated_by_its_vote(harness):
    def two_refuse(request):  # judges b and c always say refusal: the vote fails
        return passing_judge(request) if request["model"] == ENSEMBLE_IDS[0] else REFUSAL

    srv = harness.serve(two_refuse, name=None, models=ENSEMBLE_IDS)
    for name, model_id in zip("abc", ENSEMBLE_IDS):
        harness.add_model(name, srv, model=model_id)
    stage4(harness.work)
    assert harness.run(main, "--check_model=a,b,c", "--input_file=r.csv", "--audit=10") == 0
    info = runinfo(harness.work / "r_response_check_merged_a+b+c.csv")
    assert [j["verdict"] for j in info["audit"]["judges"]] == ["passed", "failed", "failed"]
    assert info["judge_skipped"]["judge"] == "a+b+c (majority vote)" and row_requests(srv) == []


def test_no_audit_gates_nothing(harness):
    srv = harness.serve(always_refusal)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=0") == 0
    assert len(row_requests(srv)) == N_ROWS and chat_requests(srv, "audit") == []
    info = runinfo(harness.work / OUT)
    assert info.get("audit") is None and "judge_skipped" not in info


# ------------------------------------------------------------------ batch mode


def batch_kinds(srv) -> list[set[str]]:
    """Per batch created, in order: the kinds of request its lines hold."""
    return [{stage_of(json.loads(line)["body"]) for line in b["_lines"]} for b in srv.batches.created()]


def test_in_batch_mode_the_audit_goes_first_and_a_failing_judge_gets_no_rows_batch(harness):
    srv = harness.serve(always_refusal)
    stage4(harness.work)
    args = ("--check_model=fake", "--input_file=r.csv", "--audit=10", "--batch", "--batch_poll_seconds=0")
    assert harness.run(main, *args) == 0
    assert batch_kinds(srv) == [{"audit"}] and chat_requests(srv) == []  # one batch, the audit's, nothing online
    info = runinfo(harness.work / OUT)
    assert info["judge_skipped"]["reason"] == "failed" and info["audit"]["batch"]["mode"] == "submit"
    # Again: the audit is cached, no batch is created.
    assert harness.run(main, *args) == 0 and len(srv.batches.created()) == 1
    # The override: the rows' batch, then nothing else.
    assert harness.run(main, *args, "--judge_failed_audit") == 0
    assert batch_kinds(srv) == [{"audit"}, {"judge"}] and chat_requests(srv) == []
    assert runinfo(harness.work / OUT)["rows_written"] == N_ROWS


def test_in_batch_mode_a_passing_judge_gets_the_audits_batch_then_the_rows(harness):
    srv = harness.serve(passing_judge)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10", "--batch",
                       "--batch_poll_seconds=0") == 0
    assert batch_kinds(srv) == [{"audit"}, {"judge"}] and chat_requests(srv) == []
    sizes = [len(b["_lines"]) for b in srv.batches.created()]
    assert sizes == [10, N_ROWS]
    sidecar = json.loads((harness.work / "r_response_check_merged_fake.batch.json").read_text())
    assert [s["requests"] for s in sidecar["shards"]] == [10, N_ROWS]  # one record of both batches
    info = runinfo(harness.work / OUT)
    assert info["audit"]["verdict"] == "passed" and info["rows_written"] == N_ROWS


def test_with_the_override_in_batch_mode_one_batch_holds_the_rows_and_the_audit(harness):
    srv = harness.serve(always_refusal)
    stage4(harness.work)
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10", "--batch",
                       "--batch_poll_seconds=0", "--judge_failed_audit") == 0
    assert batch_kinds(srv) == [{"audit", "judge"}] and chat_requests(srv) == []
    info = runinfo(harness.work / OUT)
    assert info["audit"]["verdict"] == "failed" and info["audit"]["cached"] == 10 and info["rows_written"] == N_ROWS


def test_batch_export_writes_the_audits_requests_first(harness, capsys, tmp_path):
    harness.serve(always_refusal)
    stage4(harness.work)
    out = tmp_path / "shards"
    assert harness.run(main, "--check_model=fake", "--input_file=r.csv", "--audit=10",
                       f"--batch_export={out}") == 0
    files = list(out.glob("*.jsonl"))
    lines = [json.loads(ln) for f in files for ln in f.read_text().splitlines()]
    assert len(lines) == 10 and {stage_of(ln["body"]) for ln in lines} == {"audit"}
    assert "The judge's audit comes first" in capsys.readouterr().out


# ------------------------------------------------------------------ the report


def test_the_report_on_skipped_samples_keeps_the_keyword_rates_and_says_why_nothing_was_judged(harness, tmp_path):
    from orbench import report as rp
    from tests.report_audit_helpers import pairs, write_stage4

    harness.serve(always_refusal)
    run = harness.work / "run"
    for name, rows in {"or-bench-hard-1k": pairs(0, 0, 6, 14), "or-bench-toxic": pairs(0, 0, 15, 5)}.items():
        s4 = write_stage4(run / "5_results" / f"m_merged_{name}.csv", rows)
        out = run / "6_judged" / f"m_merged_{name}_response_check_merged_fake.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        assert harness.run(main, "--check_model=fake", f"--input_file={s4}", "--sample=10", "--audit=20",
                           f"--output_path={out}") == 0
    rep = rp.build_report([run / "5_results", run / "6_judged"])
    judge = rep.judges["fake"]
    assert judge.status == "failed" and judge.nothing_judged and (judge.skipped, judge.judged) == (2, 0)
    row = rep.summary.iloc[0]
    assert row["hard_rejection_pct"] == pytest.approx(30.0) and row["toxic_rejection_pct"] == pytest.approx(75.0)
    assert rep.corrections.empty  # no judged sample, so no corrected rate, empty or otherwise
    assert len(rep.warnings) == 1 and "did not send it the rows: nothing was judged" in rep.warnings[0]
    md = rp.summary_markdown(rep)
    assert "FAILED: not sent the rows, nothing judged" in md and "keyword rules" in md
    assert "its rates and corrected rates are in the details" not in md  # there are none
    assert "An audit of 20 rows (fewer than stage 5's default 100) has wide intervals" in md
    out = tmp_path / "report"
    assert rp.main([str(run / "5_results"), str(run / "6_judged"), "--output_dir", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "No row was judged: judge fake failed its audit" in page
    assert "rows not sent: the judge failed its audit" in page
    assert "a stage-5 file of the same rows as a stage-4 file" not in page


def test_help_says_a_gated_judge_exits_0(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit codes: 0 every row done, or none sent because the judge failed its audit" in text
    assert "3 some rows (or audit calls) failed" in text
