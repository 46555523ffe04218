"""End to end over HTTP, with the default detector (`scored`) badly wrong on a model: stage 4,
stage 5 on 300 judged rows, and the report's score-powered corrected rate.

The target (a fake server) refuses half the prompts; most of its refusals send the user to a
professional without a refusal word, which the detector scores about 0.24 (an answer at the
0.5 threshold), so the keyword rate is 15%, 35 points off. The score still ranks those
refusals above the real answers (about 0.08 and 0.10). The fixture's texts are chosen for the
shipped detector: a retrained detector that scores them otherwise may need new ones. The judge (the same fake server, another
model name) answers from the known labels.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest

from orbench import report as rp
from orbench.statistics.estimators import correct
from orbench.stages import alignment, check_response
from tests.responders import audit_labels, judged_pair, knowing_audit_reply, last_user, stage_of
from tests.stage_helpers import harness, read_csv, runinfo, write_csv  # noqa: F401  (fixture)

N_ROWS = 1000
JUDGED = 300
KINDS = {  # label for the judge, the target's reply
    "caught": ("direct_refusal", "Sorry, but I will not assist with this request."),
    "missed": ("indirect_refusal", "This depends on many things. It is best discussed with a professional who knows "
                                   "your situation."),
    "answer": ("direct_answer", "Sure. Here is how it works, step by step: first gather the materials, then follow the guide."),
    "hedged": ("direct_answer", "Here is an overview, with a note on safety: step one is to plan carefully, step two is to follow the guide."),
}
COUNTS = {"caught": 150, "missed": 350, "answer": 400, "hedged": 100}


@pytest.fixture
def world(harness):
    kinds = [k for k, n in COUNTS.items() for _ in range(n)]
    random.Random(11).shuffle(kinds)
    rows = {f"Question {i}: what about case {i}?": k for i, k in enumerate(kinds)}
    labels = audit_labels()

    def responder(request):
        if stage_of(request) == "audit":  # a judge that knows the labels passes its audit
            return knowing_audit_reply(request, labels)
        if stage_of(request) == "judge":
            question, response = judged_pair(request)
            label, said = KINDS[rows[question]]
            assert response == said
            return f"Judged from the known label. [[{label}]]"
        return KINDS[rows[last_user(request)]][1]

    srv = harness.serve(responder, name="target", model="target-id")
    harness.add_model("judge", srv, model="judge-id")
    write_csv(harness.work / "or-bench-hard-1k.csv", {"prompt": list(rows), "category": ["privacy"] * len(rows)})
    return rows


def test_the_score_powered_interval_covers_and_is_narrower_than_todays(harness, world):
    truth = 100.0 * (COUNTS["caught"] + COUNTS["missed"]) / N_ROWS  # 50.0
    assert harness.run(alignment.main, "--model=target", "--input_file=or-bench-hard-1k.csv") == 0
    stage4 = harness.work / "final_target_results" / "target_merged_or-bench-hard-1k.csv"
    pop = read_csv(stage4)
    keyword = 100.0 * pop["is_rejected"].eq("True").mean()
    assert abs(keyword - truth) >= 30  # the detector is badly wrong on this model
    judged_path = "judged/target_merged_or-bench-hard-1k_response_check_merged_judge.csv"
    assert harness.run(check_response.main, "--check_model=judge", f"--input_file={stage4}", f"--sample={JUDGED}",
                       "--seed=1", f"--output_path={judged_path}") == 0

    design = runinfo(harness.work / judged_path)["sample_design"]
    assert design["name"] == "uniform" and design["size"] == JUDGED and design["population"] == N_ROWS
    assert design["detector"] == runinfo(stage4)["refusal_weights"] and design["detector"].startswith("sha256:")

    out = harness.work / "report"
    assert rp.main([str(harness.work / "judged"), "--output_dir", str(out)]) == 0
    s = pd.read_csv(out / "summary.csv").iloc[0]
    assert s["hard_estimator"] == "score" and s["hard_judged_sample"] == JUDGED
    assert s["hard_corrected_ci_low_pct"] <= truth <= s["hard_corrected_ci_high_pct"]

    # Today's estimator on the same rows, from the counts.
    judged = read_csv(harness.work / judged_path)
    j = judged["answer_category"].isin(["direct_refusal", "indirect_refusal"])
    k = judged["is_rejected"].eq("True")
    today = correct(int(pop["is_rejected"].eq("True").sum()), N_ROWS, int(j.sum()), int((j & ~k).sum()),
                    int((~j & k).sum()), len(judged))
    assert today.ci_low * 100 <= truth <= today.ci_high * 100
    today_half = 50.0 * (today.ci_high - today.ci_low)
    assert s["hard_halfwidth_pts"] < 0.6 * today_half, (s["hard_halfwidth_pts"], today_half)
    assert s["hard_halfwidth_pts"] <= 3.0
