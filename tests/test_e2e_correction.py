"""End to end over HTTP: stage 4 with keyword rules that get a model badly wrong, stage 5 on a
random sample with a judge that knows the true labels, and the report's corrected rate.

The target model (a fake server) refuses 70% of the prompts, mostly in words the gpt-3.5
rules do not know ("I won't ..."), and some of its answers say "can't" in passing, which
those rules take for a refusal. The keyword rate is then about 15%, 55 points off. The judge
(the same fake server, another model name) answers from the known labels.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest

from orbench import report as rp
from orbench.stages import alignment, check_response
from tests.responders import audit_labels, judged_pair, knowing_audit_reply, last_user, stage_of
from tests.stage_helpers import chat_requests, harness, write_csv  # noqa: F401  (fixture)

N_ROWS = 800
SAMPLE = 400

# (true label for the judge, response, what the gpt-3.5 keyword rule says)
KINDS = {
    "caught": ("direct_refusal", "I'm sorry, but I can't help with that.", True),
    "missed": ("indirect_refusal", "I won't help plan that. A counsellor or a lawyer would be a better place to ask.", False),
    "flagged": ("direct_answer", "Sure. Measure twice, cut once: you can't go wrong with that order.", True),
    "answer": ("direct_answer", "Sure. Here is how it works, step by step.", False),
}
COUNTS = {"caught": 80, "missed": 480, "flagged": 40, "answer": 200}  # 560 refusals of 800


def plan() -> dict[str, str]:
    kinds = [k for k, n in COUNTS.items() for _ in range(n)]
    random.Random(7).shuffle(kinds)
    return {f"Question {i}: how would one handle case {i}?": k for i, k in enumerate(kinds)}


@pytest.fixture
def world(harness):
    rows = plan()

    labels = audit_labels()

    def responder(request):
        if stage_of(request) == "audit":  # a judge that knows the labels passes its audit
            return knowing_audit_reply(request, labels)
        if stage_of(request) == "judge":
            question, response = judged_pair(request)
            label, said, _ = KINDS[rows[question]]
            assert response == said  # the judge sees the target's own reply
            return f"Judged against the known label. [[{label}]]"
        return KINDS[rows[last_user(request)]][1]

    srv = harness.serve(responder, name="target", model="target-id")
    harness.add_model("judge", srv, model="judge-id")
    write_csv(harness.work / "or-bench-hard-1k.csv", {"prompt": list(rows), "category": ["privacy"] * len(rows)})
    return srv, rows


def test_judged_sample_corrects_a_keyword_rate_that_is_far_off(harness, world, capsys):
    srv, rows = world
    truth = 100.0 * (COUNTS["caught"] + COUNTS["missed"]) / N_ROWS  # 70.0
    assert harness.run(alignment.main, "--model=target", "--input_file=or-bench-hard-1k.csv",
                       "--rules=gpt-3.5") == 0
    stage4 = harness.work / "final_target_results" / "target_merged_or-bench-hard-1k.csv"
    assert harness.run(check_response.main, "--check_model=judge", f"--input_file={stage4}",
                       f"--sample={SAMPLE}", "--seed=1", "--output_path=judged/target_merged_or-bench-hard-1k_response_check_merged_judge.csv") == 0
    judge_calls = chat_requests(srv, "judge")
    assert len(judge_calls) == SAMPLE and len({judged_pair(r.body)[0] for r in judge_calls}) == SAMPLE

    capsys.readouterr()
    out = harness.work / "report"
    # Only the judged file: the report finds the stage-4 file from its run.json.
    assert rp.main([str(harness.work / "judged"), "--output_dir", str(out)]) == 0
    err = capsys.readouterr().err
    s = pd.read_csv(out / "summary.csv").iloc[0]

    keyword = s["hard_rejection_pct"]
    assert s["hard_scored_by"] == "keyword" and s["hard_scored"] == N_ROWS
    assert keyword == pytest.approx(100.0 * (COUNTS["caught"] + COUNTS["flagged"]) / N_ROWS)
    assert abs(keyword - truth) >= 30
    assert abs(s["hard_corrected_pct"] - truth) <= 5
    assert s["hard_corrected_ci_low_pct"] <= truth <= s["hard_corrected_ci_high_pct"]
    assert s["hard_judged_sample"] == SAMPLE and s["hard_kappa"] < 0.8
    assert "keyword rules are unreliable for these models; report the corrected rate" in err
    # the judge knew the audit's labels: it passed, so its corrected rate is the headline one
    assert s["hard_sample_judge_audit"] == "passed" and bool(s["hard_corrected_used"]) is True
