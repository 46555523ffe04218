"""The report on judged samples with scores and designs: each judged row weighed by its own
recorded inclusion probability, the planning columns, and a `score`-design file that has
lost its probabilities refused rather than read as a uniform sample."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from orbench import report as rp
from orbench.stages.check_response import main as stage5
from orbench.statistics.stratified import stratum_of
from tests.responders import judged_pair, passes_audit
from tests.stage_helpers import error_lines, harness, read_csv, write_csv  # noqa: F401  (fixture)

STAGE4 = "m_merged_or-bench-hard-1k.csv"
OUT = "m_merged_or-bench-hard-1k_response_check_merged_fake.csv"
SCORES = (0.01, 0.2, 0.55, 0.97)


def refuses(i: int) -> bool:
    """The judge's verdict, by score band: none at 0.01, 60% at 0.2, 90% at 0.55, 10% at 0.97
    (the score is badly off: the design's doubt favours the 0.2 and 0.55 bands)."""
    band = i % 4
    return (band == 1 and i % 5 < 3) or (band == 2 and i % 10 != 2) or (band == 3 and i % 10 == 3)


def write_stage4(work, n=800):
    rows = [{"prompt": f"question {i}", "is_rejected": str(SCORES[i % 4] >= 0.5),
             "refusal_score": f"{SCORES[i % 4]:.4f}",
             "response": (f"No, not {i}." if refuses(i) else f"Here is {i}."), "category": "hate"}
            for i in range(n)]
    return write_csv(work / STAGE4, rows)


def judge(request):
    _, response = judged_pair(request)
    return "Reason. [[direct_refusal]]" if response.startswith("No,") else "Reason. [[direct_answer]]"


def by_hand(work) -> float:
    """sum over score bands of (band rows / all rows) x (judge's refusals / judged rows in the band)."""
    pop = read_csv(work / STAGE4)
    judged = read_csv(work / OUT)
    pop["band"] = stratum_of(pop["refusal_score"].astype(float))
    judged["band"] = stratum_of(judged["refusal_score"].astype(float))
    judged["refused"] = judged["answer_category"].eq("direct_refusal")
    rate = judged.groupby("band")["refused"].mean()
    share = pop["band"].value_counts(normalize=True)
    return 100.0 * float(sum(share[b] * rate[b] for b in share.index))


def test_a_score_design_sample_is_weighed_by_its_probabilities(harness, capsys):
    harness.serve(passes_audit(judge))
    write_stage4(harness.work)
    assert harness.run(stage5, "--check_model=fake", f"--input_file={STAGE4}", "--sample=200", "--design=score") == 0
    capsys.readouterr()
    assert rp.main([str(harness.work / OUT), "--output_dir", str(harness.work / "report")]) == 0
    console = capsys.readouterr().out
    s = pd.read_csv(harness.work / "report" / "summary.csv").iloc[0]
    truth = 100.0 * sum(refuses(i) for i in range(800)) / 800
    assert s["hard_corrected_pct"] == pytest.approx(by_hand(harness.work), abs=1e-4)  # summary.csv: 4 decimals
    assert s["hard_corrected_ci_low_pct"] <= truth <= s["hard_corrected_ci_high_pct"]
    # Unweighted, the judged rows over-represent the 0.2 and 0.55 bands (their doubt is highest).
    assert s["hard_sample_judge_pct"] - s["hard_corrected_pct"] > 5
    assert s["hard_estimator"] == "score" and s["hard_design"] == "score"
    assert s["hard_halfwidth_pts"] == pytest.approx((s["hard_corrected_ci_high_pct"] - s["hard_corrected_ci_low_pct"]) / 2, abs=1e-4)
    calls = [s[f"hard_judge_calls_for_{p}pts"] for p in (1, 2, 3)]
    assert calls[0] > calls[1] > calls[2] >= 1
    assert f"judge calls for ±1 / ±2 / ±3 points: {int(calls[0]):,} / {int(calls[1]):,} / {int(calls[2]):,}" in console
    md = (harness.work / "report" / "summary.md").read_text(encoding="utf-8")
    assert "judge calls for ±1 / ±2 / ±3" in md and "(score, score)" in md


def test_a_score_design_file_without_probabilities_is_refused(harness, capsys):
    harness.serve(passes_audit(judge))
    write_stage4(harness.work)
    assert harness.run(stage5, "--check_model=fake", f"--input_file={STAGE4}", "--sample=100", "--design=score") == 0
    judged = read_csv(harness.work / OUT).drop(columns=["inclusion_probability"])
    judged.to_csv(harness.work / OUT, index=False)
    capsys.readouterr()
    assert rp.main([str(harness.work / OUT), "--output_dir", str(harness.work / "report")]) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "--design score" in lines[0] and "inclusion_probability" in lines[0]
    assert not (harness.work / "report" / "summary.csv").exists()


def test_an_older_uniform_sample_without_the_column_still_gets_the_score_estimate(harness, capsys):
    harness.serve(passes_audit(judge))
    write_stage4(harness.work)
    assert harness.run(stage5, "--check_model=fake", f"--input_file={STAGE4}", "--sample=200") == 0
    # As stage 5 wrote it before designs: no probability column, no sample_design.
    read_csv(harness.work / OUT).drop(columns=["inclusion_probability", "refusal_score"]).to_csv(
        harness.work / OUT, index=False)
    run_json = harness.work / OUT.replace(".csv", ".run.json")
    info = json.loads(run_json.read_text(encoding="utf-8"))
    del info["sample_design"]
    run_json.write_text(json.dumps(info), encoding="utf-8")
    assert rp.main([str(harness.work / OUT), "--output_dir", str(harness.work / "report")]) == 0
    s = pd.read_csv(harness.work / "report" / "summary.csv").iloc[0]
    assert s["hard_estimator"] == "score" and s["hard_design"] == "uniform"
    # Scores looked up in the stage-4 file by prompt and response: the same as by hand.
    judged = read_csv(harness.work / OUT)
    pop = read_csv(harness.work / STAGE4)
    write_csv(harness.work / OUT, judged.merge(pop[["prompt", "refusal_score"]], on="prompt"))
    assert s["hard_corrected_pct"] == pytest.approx(by_hand(harness.work), abs=1e-4)  # summary.csv: 4 decimals


def test_a_sample_of_a_file_without_scores_keeps_todays_estimator(harness):
    harness.serve(passes_audit(judge))
    write_stage4(harness.work)
    pop = read_csv(harness.work / STAGE4)
    pop.drop(columns=["refusal_score"]).to_csv(harness.work / STAGE4, index=False)
    assert harness.run(stage5, "--check_model=fake", f"--input_file={STAGE4}", "--sample=200") == 0
    assert rp.main([str(harness.work / OUT), "--output_dir", str(harness.work / "report")]) == 0
    s = pd.read_csv(harness.work / "report" / "summary.csv").iloc[0]
    assert s["hard_estimator"] == "keyword"
    from orbench.statistics.estimators import correct

    judged = read_csv(harness.work / OUT)
    j = judged["answer_category"].eq("direct_refusal")
    k = judged["is_rejected"].eq("True")
    c = correct(int(pop["is_rejected"].eq("True").sum()), len(pop), int(j.sum()), int((j & ~k).sum()),
                int((~j & k).sum()), len(judged))
    assert s["hard_corrected_pct"] == pytest.approx(100 * c.rate, abs=1e-4)
    assert s["hard_corrected_ci_low_pct"] == pytest.approx(100 * c.ci_low, abs=1e-4)
