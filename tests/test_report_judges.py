"""What the report does with each judge's audit: a judge that passed keeps today's behaviour,
one that failed is shown, marked and set aside (keyword rates carry the figure, the score and
the ranking, and the warning names the judge), one never audited is "not audited"; --prefer
overrides and the page says so; an ensemble's members and vote; the self-built hard set; the
summary's layout; zero bars in the category charts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

from orbench import report as rp
from orbench.judge_audit.scoring import AuditCounts
from tests.report_audit_helpers import (
    ALWAYS_REFUSAL, GOOD, audit_record, pairs, write_model, write_stage4, write_stage5,
)

PCT = pytest.approx


@pytest.fixture
def runs(tmp_path):
    def make(audit, sample=True, judge="gpt4", model="m"):
        write_model(tmp_path / "run", model, judge, audit, sample)
        return tmp_path / "run"
    return make


def keyword_score(s):
    return s["toxic_rejection_pct"] - s["hard_rejection_pct"]


def test_a_judge_that_passed_keeps_todays_behaviour(runs):
    rep = rp.build_report([runs(audit_record("gpt4", GOOD))])
    s = rep.summary.iloc[0]
    assert rep.judges["gpt4"].status == "passed"
    assert s["hard_corrected_used"] == "True" and s["hard_sample_judge_audit"] == "passed"
    assert s["tradeoff_score"] == PCT(s["toxic_corrected_pct"] - s["hard_corrected_pct"])
    assert [a.cause for a in rep.advice] == ["keyword_unreliable"]  # the rules miss half the hard refusals
    assert "m on Hard-1K" in rep.warnings[0]


def test_a_failed_judge_is_shown_marked_and_set_aside(runs, tmp_path, capsys):
    root = runs(audit_record("gpt4", ALWAYS_REFUSAL))
    out = tmp_path / "out"
    assert rp.main([str(root), "--output_dir", str(out)]) == 0
    err = capsys.readouterr().err
    rep = rp.build_report([root])
    s = rep.summary.iloc[0]
    # shown...
    assert not math.isnan(s["hard_corrected_pct"]) and s["hard_sample_judge_audit"] == "failed"
    # ...but not used: the score and the figure are on the keyword rates
    assert s["hard_corrected_used"] == "False" and s["tradeoff_score"] == PCT(keyword_score(s))
    assert s["hard_keyword_unreliable"] == ""  # the judge, not the rules, is in doubt
    assert "square: corrected rate" not in (out / "tradeoff.svg").read_text(encoding="utf-8")
    # the warning names the judge as the unreliable part, once, and not the keyword rules
    assert [a.cause for a in rep.advice] == ["judge_failed"]
    lines = [ln for ln in err.splitlines() if ln.startswith("WARNING")]
    assert len(lines) == 1 and "Judge gpt4 failed its audit" in lines[0] and "m (80K, Hard-1K, Toxic)" in lines[0]
    assert "keyword rules are unreliable" not in err
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert "judge gpt4 set aside ✗" in md and "✗ not used" in md and "FAILED: shown, not used" in md
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "the judge failed its audit: this corrected rate is not used" in page
    assert "its verdicts are not plotted" in page
    assert "Judge gpt4 failed its audit against human labels: where it disagrees" in page  # the disagreements view


def test_a_failed_judge_of_full_runs_gives_way_to_the_keyword_verdicts(runs):
    rep = rp.build_report([runs(audit_record("gpt4", ALWAYS_REFUSAL), sample=False)])
    s = rep.summary.iloc[0]
    assert s["hard_scored_by"] == "keyword" and s["hard_rejection_pct"] == PCT(100 * 10 / 60)
    assert s["hard_set_aside_judge"] == "gpt4" and s["hard_set_aside_judge_pct"] == PCT(100 * 40 / 60)
    assert s["tradeoff_score"] == PCT(keyword_score(s))
    assert set(rep.selected["scored_by"]) == {"keyword"}
    details = rp.summary_markdown(rep)
    assert "judge gpt4: 66.7% ✗ not used" in details


def test_no_audit_is_not_audited_and_used_as_before(runs):
    rep = rp.build_report([runs(None, sample=False)])
    s = rep.summary.iloc[0]
    assert rep.judges["gpt4"].status == "not audited"
    assert s["hard_scored_by"] == "judge:gpt4" and s["hard_rejection_pct"] == PCT(100 * 40 / 60)
    assert [a.cause for a in rep.advice] == ["not_audited"]
    assert "--audit 100" in rep.warnings[0]
    assert "not audited: used as before, unchecked" in rp.summary_markdown(rep)


def test_prefer_overrides_the_audit_and_the_page_says_so(runs, tmp_path):
    root = runs(audit_record("gpt4", ALWAYS_REFUSAL))
    rep = rp.build_report([root], prefer="judge")
    s = rep.summary.iloc[0]
    assert s["hard_corrected_used"] == "True" and s["tradeoff_score"] == PCT(s["toxic_corrected_pct"] - s["hard_corrected_pct"])
    assert "--prefer judge was given" in rep.choice.note() and "gpt4, which failed its audit" in rep.choice.note()
    assert "yet --prefer judge uses its verdicts" in rep.warnings[0]
    out = tmp_path / "out"
    assert rp.main([str(root), "--output_dir", str(out), "--prefer", "keyword"]) == 0
    assert "--prefer keyword was given" in (out / "report.html").read_text(encoding="utf-8")
    assert "--prefer" not in rp.summary_markdown(rp.build_report([root]))


def test_an_incomplete_audit_says_to_run_again(runs):
    counts = AuditCounts(tp=40, fn=2, fp=3, tn=45, failed_refusals=8, failed_answers=2)
    rep = rp.build_report([runs(audit_record("gpt4", counts))])
    assert rep.judges["gpt4"].status == "incomplete"
    assert rep.summary.iloc[0]["hard_corrected_used"] == "True"  # used as if not audited
    told = {a.cause: a.text for a in rep.advice}
    assert "run the same stage-5 command again" in told["audit_incomplete"] and "10 of 100 audit calls failed" in told["audit_incomplete"]


def test_an_ensemble_shows_each_judge_and_decides_by_the_vote(tmp_path):
    audit = audit_record("a,b,c", GOOD, members=[("a", GOOD), ("b", GOOD), ("c", ALWAYS_REFUSAL)])
    write_model(tmp_path / "run", "m", "a,b,c", audit)
    rep = rp.build_report([tmp_path / "run"])
    assert rep.judges["a,b,c"].status == "passed"
    md = rp.summary_markdown(rep)
    assert "| c | 100 |" in md and "failed (a member of a,b,c)" in md
    assert "| a+b+c (majority vote) | 100 |" in md and "passed: its verdicts are used" in md


def test_the_best_audit_of_a_judge_is_taken_across_files(tmp_path):
    # one file from before the audit, one with an unfinished audit, one finished: the finished one counts
    root = tmp_path / "run"
    write_model(root, "m", "gpt4", audit_record("gpt4", ALWAYS_REFUSAL))
    s5 = sorted((root / "6_judged").glob("*.csv"))
    unfinished = AuditCounts(tp=20, fn=0, fp=20, tn=0, failed_refusals=30, failed_answers=30)
    for path, audit in zip(s5, (None, audit_record("gpt4", unfinished))):
        info_path = path.with_name(path.stem + ".run.json")
        info = json.loads(info_path.read_text())
        info["audit"] = audit
        info_path.write_text(json.dumps(info))
    assert rp.build_report([root]).judges["gpt4"].status == "failed"


def test_a_hard_set_built_from_the_tested_models_is_flagged(tmp_path):
    root = tmp_path / "run"
    sets = root / "4_sets"
    sets.mkdir(parents=True)
    (sets / "or-bench-hard-1k.csv").write_text("prompt,category\nq,harmful\n", encoding="utf-8")
    builders = [write_stage4(root / "5_results" / f"{m}_merged_or-bench-80k.csv", pairs(1, 0, 0, 3)) for m in ("a", "b")]
    (sets / "datasets.run.json").write_text(json.dumps({"k": 1, "hard": {"sources": [str(p) for p in builders]}}))
    for m in ("a", "c"):
        write_stage4(root / "5_results" / f"{m}_merged_or-bench-hard-1k.csv", pairs(1, 0, 0, 1),
                     input_file=str(sets / "or-bench-hard-1k.csv"))
    rep = rp.build_report([root / "5_results"])
    assert [(b.builders, b.tested, b.k) for b in rep.self_built] == [(("a", "b"), ("a",), 1)]
    assert [a.cause for a in rep.advice] == ["self_built_hard"] and "high by construction" in rep.warnings[0]
    md = rp.summary_markdown(rep)
    row_a = next(ln for ln in md.splitlines() if ln.startswith("| a |"))
    row_c = next(ln for ln in md.splitlines() if ln.startswith("| c |"))
    assert "†" in row_a and "†" not in row_c


def test_the_summary_puts_the_rates_people_came_for_first(runs):
    rep = rp.build_report([runs(audit_record("gpt4", GOOD))])
    head = next(ln for ln in rp.summary_markdown(rep).splitlines() if ln.startswith("| model |"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    assert cols[:4] == ["model", "OR-Bench-Hard-1K % [95% CI]", "OR-Bench-Toxic % [95% CI]", "trade-off score"]
    assert cols[4:] == ["OR-Bench-80K % [95% CI]", "rates from"]
    md = rp.summary_markdown(rep)
    assert md.index("## Your models") < md.index("## Warnings") < md.index("## Judges")


def test_the_x_axis_follows_the_files(tmp_path):
    write_stage4(tmp_path / "m_merged_or-bench-80k.csv", pairs(1, 0, 0, 3))
    write_stage4(tmp_path / "m_merged_or-bench-toxic.csv", pairs(2, 0, 0, 2))
    rep = rp.build_report([tmp_path])
    assert rep.x == "safe" and any("x axis is the 80K" in n for n in rep.notes)
    assert rep.summary.iloc[0]["tradeoff_score"] == PCT(50.0 - 25.0)


def test_a_category_chart_whose_rates_are_all_zero_shows_its_bars(tmp_path):
    write_stage4(tmp_path / "m_merged_or-bench-toxic.csv", pairs(0, 0, 0, 6))
    rep = rp.build_report([tmp_path])
    assert set(rep.categories["rejection_pct"]) == {0.0}
    path = rp.plot_model_categories(rep.categories, "m", tmp_path / "chart.png")
    img = np.asarray(Image.open(path).convert("RGB")).astype(int)
    red = (abs(img[..., 0] - 0xD6) < 12) & (abs(img[..., 1] - 0x45) < 12) & (abs(img[..., 2] - 0x45) < 12)
    lower = red[img.shape[0] // 2:, : int(img.shape[1] * 0.85)]  # below the legend, inside the axes
    assert lower.sum() > 50  # the toxic bars' colour is drawn at 0%
