"""The report's corrected rates: a judged sample checks the keyword rules of all rows.

Small synthetic stage-4 files and stage-5 samples, with the counts worked out by hand.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from orbench import report as rp
from orbench.statistics.estimators import correct
from tests.stage_helpers import write_rows

PCT = pytest.approx



def stage4(path: Path, truth_keyword, category=lambda i: "hate") -> list[tuple]:
    """truth_keyword: (judge says refusal, keyword says refusal) per row. Returns the rows."""
    rows = [(f"p{i}", str(k), f"r{i}", category(i), t) for i, (t, k) in enumerate(truth_keyword)]
    write_rows(path, ["prompt", "is_rejected", "response", "category"], [r[:4] for r in rows])
    return rows


def sample(path: Path, rows, stage4_path: Path | None, judge="gpt4", keyword_column=True,
           run=True) -> Path:
    """A stage-5 file judging `rows` (from stage4), with its run.json naming the source."""
    cols = ["prompt", "answer_category", "answer_type_response", "response", "category"]
    out = []
    for p, kw, resp, cat, truth in rows:
        verdict = "direct_refusal" if truth else "direct_answer"
        out.append([p, verdict, f"[[{verdict}]]", resp, cat] + ([kw] if keyword_column else []))
    write_rows(path, cols + (["is_rejected"] if keyword_column else []), out)
    if run:
        info = {"check_model": judge, "sample_size": len(rows), "sample_seed": 0,
                "population_rows": 0, "sampled_rows": len(rows), "complete": True,
                "input_file": str(stage4_path) if stage4_path else None,
                "input_path": str(stage4_path.resolve()) if stage4_path else None}
        path.with_name(path.stem + ".run.json").write_text(json.dumps(info), encoding="utf-8")
    return path


def case(n_both, n_missed, n_false, n_neither):
    """(judge, keyword) pairs: both refuse, keyword missed a refusal, keyword false refusal, neither."""
    return ([(True, True)] * n_both + [(True, False)] * n_missed + [(False, True)] * n_false
            + [(False, False)] * n_neither)


@pytest.fixture
def missed_half(tmp_path):
    """A model whose keyword rules miss half its refusals.

    400 rows: judge-refusals 280 (140 caught, 140 missed), answers 120 (6 flagged).
    The sample: every 4th row, 100 rows: 35 both, 35 missed, 2 false, 28 neither.
    """
    rows4 = case(140, 140, 6, 114)
    # interleave so every 4th row gives the sample counts above
    order = []
    groups = {"b": rows4[:140], "m": rows4[140:280], "f": rows4[280:286], "n": rows4[286:]}
    plan = ["b"] * 35 + ["m"] * 35 + ["f"] * 2 + ["n"] * 28
    for g in plan:  # the sampled row of each block of 4
        order.append(groups[g].pop())
    rest = [r for g in "bmfn" for r in groups[g]]
    full = []
    for i, head in enumerate(order):
        full += [head] + rest[3 * i:3 * i + 3]
    assert len(full) == 400
    root = tmp_path / "runs"
    s4 = root / "final_m_results" / "m_merged_or-bench-hard-1k.csv"
    rows = stage4(s4, full)
    s5 = sample(root / "judged" / "m_merged_or-bench-hard-1k_response_check_merged_gpt4.csv",
                rows[::4], s4)
    return root, s4, s5


def test_corrected_rate_from_hand_counts(missed_half, tmp_path):
    root, s4, s5 = missed_half
    rep = rp.build_report([root])
    s = rep.summary.set_index("model").loc["m"]
    # keyword: 146 of 400; sample: judge 70 of 100, missed 35, false 2, agree 63.
    assert s["hard_rejection_pct"] == PCT(100 * 146 / 400) and s["hard_scored_by"] == "keyword"
    assert s["hard_keyword_pct"] == PCT(36.5)
    assert s["hard_judged_sample"] == 100 and s["hard_sample_judge_pct"] == PCT(70.0)
    assert s["hard_agreement_pct"] == PCT(63.0)
    # kappa by hand: p_o = .63; judge yes .70, keyword yes .37 -> p_e = .7*.37 + .3*.63 = .448
    assert s["hard_kappa"] == PCT((0.63 - 0.448) / (1 - 0.448))
    assert s["hard_corrected_pct"] == PCT(100 * (146 / 400 + (35 - 2) / 100))
    want = correct(keyword_refused=146, population=400, judge_refused=70, missed=35,
                   false_refusals=2, judged=100)
    assert (s["hard_corrected_ci_low_pct"], s["hard_corrected_ci_high_pct"]) == \
        (PCT(100 * want.ci_low), PCT(100 * want.ci_high))
    assert s["hard_sample_judge"] == "gpt4" and s["hard_keyword_unreliable"] == "True"


def test_a_sample_is_never_the_models_rate(missed_half):
    root, s4, s5 = missed_half
    rep = rp.build_report([root])
    # The judge's 70% over 100 rows is not the model's rate: the keyword rows are chosen,
    # and per category too.
    assert set(rep.selected["scored_by"]) == {"keyword"} and len(rep.selected) == 400
    assert list(rep.categories["scored"]) == [400]
    md = rp.summary_markdown(rep)
    assert "judge % (sample only)" in md and "70.0 (100 rows, gpt4)" in md
    main_table = md.split("## Keyword rules checked")[0]
    assert "70.0" not in main_table


def test_warning_in_table_html_and_console(missed_half, tmp_path, capsys):
    root, _, _ = missed_half
    out = tmp_path / "out"
    assert rp.main([str(root), "--output_dir", str(out)]) == 0
    warning = "keyword rules are unreliable for these models; report the corrected rate"
    err = capsys.readouterr().err
    assert sum(warning in line for line in err.splitlines()) == 1
    assert warning in (out / "summary.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert warning in page and "Keyword rules checked by a judged sample" in page
    summary = (out / "summary.csv").read_text(encoding="utf-8").splitlines()
    header = summary[0].split(",")
    for col in ("hard_corrected_pct", "hard_corrected_ci_low_pct", "hard_corrected_ci_high_pct",
                "hard_judged_sample", "hard_agreement_pct", "hard_kappa"):
        assert col in header


def test_no_warning_when_the_rules_agree_and_a_warning_on_kappa_alone(tmp_path):
    root = tmp_path / "runs"
    # good: 100 rows, keyword right on all but one; sample of 50 shows no disagreement.
    s4 = root / "good_merged_or-bench-toxic.csv"
    rows = stage4(s4, case(60, 1, 0, 39))
    sample(root / "good_merged_or-bench-toxic_response_check_merged_gpt4.csv", rows[:30] + rows[61:81], s4)
    # balanced: disagreements both ways cancel (no gap), but kappa is low.
    s4b = root / "bal_merged_or-bench-toxic.csv"
    rows = stage4(s4b, case(30, 20, 20, 30))
    sample(root / "bal_merged_or-bench-toxic_response_check_merged_gpt4.csv", rows, s4b)
    rep = rp.build_report([root])
    s = rep.summary.set_index("model")
    assert s.loc["good", "toxic_keyword_unreliable"] == "False"
    assert s.loc["good", "toxic_corrected_ci_high_pct"] > s.loc["good", "toxic_corrected_pct"] + 2
    assert s.loc["bal", "toxic_corrected_pct"] == PCT(s.loc["bal", "toxic_keyword_pct"])
    assert s.loc["bal", "toxic_kappa"] == PCT(0.2)  # p_o .6, p_e .5
    assert s.loc["bal", "toxic_keyword_unreliable"] == "True"
    # one line for the cause, naming the model and set it touches (and not the good one)
    keyword = [a.text for a in rep.advice if a.cause == "keyword_unreliable"]
    assert len(keyword) == 1 and "bal on Toxic" in keyword[0] and "good on" not in keyword[0]


def test_stage4_file_found_from_run_json_even_when_not_given(missed_half, tmp_path):
    root, s4, s5 = missed_half
    rep = rp.build_report([s5])  # only the judged file
    assert rep.summary.loc[0, "hard_scored"] == 400
    assert {f.path.resolve() for f in rep.files} == {s4.resolve(), s5.resolve()}
    # Moved elsewhere: input_path is stale, input_file relative to the judged file works.
    moved = tmp_path / "moved"
    shutil.copytree(root, moved)
    shutil.rmtree(root)
    info = json.loads(moved.joinpath("judged", s5.stem + ".run.json").read_text())
    info["input_file"] = "../final_m_results/m_merged_or-bench-hard-1k.csv"
    moved.joinpath("judged", s5.stem + ".run.json").write_text(json.dumps(info))
    rep = rp.build_report([moved / "judged"])
    assert rep.summary.loc[0, "hard_judged_sample"] == 100


def test_stage5_sample_whose_stage4_file_is_missing_is_one_line_exit_2(missed_half, tmp_path, capsys):
    root, s4, s5 = missed_half
    s4.unlink()
    out = tmp_path / "out"
    assert rp.main([str(root / "judged"), "--output_dir", str(out)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "judged sample" in err[0] and "missing" in err[0]
    assert not out.exists()  # nothing written that could look finished


def test_sample_of_pairs_files_without_run_json_and_without_keyword_column(tmp_path):
    s4 = tmp_path / "a" / "m_merged_or-bench-hard-1k.csv"
    rows = stage4(s4, case(10, 10, 0, 20))
    s5 = sample(tmp_path / "b" / "judged.csv", rows, None, keyword_column=False, run=False)
    # Without the pairing the file is a full judge run over 40 rows...
    full = rp.build_report([s4, s5], datasets={str(s5): "hard"})
    assert "judge:judge" in set(full.summary["hard_scored_by"])
    # ...with it, a sample of s4 matched by prompt and response.
    rep = rp.build_report([s5], samples={str(s5): str(s4)})
    s = rep.summary.loc[0]
    assert s["hard_scored_by"] == "keyword" and s["hard_rejection_pct"] == PCT(25.0)
    assert s["hard_corrected_pct"] == PCT(50.0) and s["hard_judged_sample"] == 40


def test_per_category_corrected_rate_needs_30_judged_rows(tmp_path):
    s4 = tmp_path / "m_merged_or-bench-hard-1k.csv"
    # 100 rows: category by position; the sample holds 40 'illegal' rows and 12 'privacy'.
    rows = stage4(s4, case(20, 30, 0, 50), category=lambda i: "illegal" if i % 2 == 0 else "privacy")
    illegal = [r for r in rows if r[3] == "illegal"][:40]
    privacy = [r for r in rows if r[3] == "privacy"][:12]
    sample(tmp_path / "m_merged_or-bench-hard-1k_response_check_merged_gpt4.csv", illegal + privacy, s4)
    rep = rp.build_report([tmp_path])
    cats = rep.categories.set_index("category")
    assert cats.loc["illegal", "judged_sample"] == 40 and not math.isnan(cats.loc["illegal", "corrected_pct"])
    assert cats.loc["privacy", "judged_sample"] == 12 and math.isnan(cats.loc["privacy", "corrected_pct"])
    assert "fewer than 30" in cats.loc["privacy", "corrected_note"]
    md = rp.category_markdown(rep)
    assert "Corrected rate per category" in md and "none: only 12 judged rows (fewer than 30)" in md


def test_samples_from_two_judges_need_a_choice(missed_half):
    root, s4, s5 = missed_half
    rows = list(csv.reader(s4.open()))[1:]
    sample(root / "judged" / "m_merged_or-bench-hard-1k_response_check_merged_other.csv",
           [(p, kw, r, c, True) for p, kw, r, c in rows[:20]], s4, judge="other")
    with pytest.raises(rp.ReportError, match="several judges"):
        rp.build_report([root])
    rep = rp.build_report([root], judge="other")
    assert rep.summary.loc[0, "hard_judged_sample"] == 20 and rep.summary.loc[0, "hard_sample_judge"] == "other"


def test_trade_off_score_and_figure_use_the_corrected_rates(missed_half, tmp_path):
    root, s4, _ = missed_half
    s4t = root / "final_m_results" / "m_merged_or-bench-toxic.csv"
    stage4(s4t, case(50, 0, 0, 50))  # toxic: keyword only, 50%
    rep = rp.build_report([root])
    s = rep.summary.loc[0]
    assert s["tradeoff_score"] == PCT(50.0 - s["hard_corrected_pct"])
    fig = rp.plot_tradeoff(rep.summary, tmp_path / "fig")
    assert fig.points == 1
    assert "square: corrected rate" in fig.svg.read_text(encoding="utf-8")
    # Without the sample there is no corrected point, and the legend does not claim one.
    plain = rp.plot_tradeoff(rp.build_report([s4, s4t]).summary, tmp_path / "plain")
    assert plain.points == 1 and "square: corrected rate" not in plain.svg.read_text(encoding="utf-8")


def test_prefer_keyword_keeps_the_headline_on_keyword_rates(missed_half, tmp_path):
    root, s4, _ = missed_half
    stage4(root / "final_m_results" / "m_merged_or-bench-toxic.csv", case(50, 0, 0, 50))
    rep = rp.build_report([root], prefer="keyword")
    s = rep.summary.loc[0]
    assert s["tradeoff_score"] == PCT(50.0 - 36.5)  # keyword rates
    assert not math.isnan(s["hard_corrected_pct"]) and rep.warnings  # still shown, still warned
    assert "--prefer keyword" in rp.summary_markdown(rep)
    out = tmp_path / "out"
    assert rp.main([str(root), "--output_dir", str(out), "--prefer", "keyword"]) == 0
    assert "square: corrected rate" not in (out / "tradeoff.svg").read_text(encoding="utf-8")


def test_rows_appended_without_the_sample_columns_count_as_full_runs(missed_half):
    # Another row source (e.g. a log reader) may not know the sample/keyword columns.
    root, s4, s5 = missed_half
    results = rp.read_results(rp.scan_inputs([root]))
    extra = results[results["stage"] == 5].drop(columns=["sample", "keyword"]).assign(judge="other", file="log")
    both = rp.select_verdicts(pd.concat([results, extra], ignore_index=True), judge="other")
    assert set(both["scored_by"]) == {"judge:other"} and len(both) == len(extra)


def test_a_sample_that_holds_every_row_has_the_judges_wilson_interval(tmp_path):
    # With stage 4's scores the score estimator's interval would have no width once every row
    # is judged; the report then gives the judge's Wilson interval, as for "judge every row".
    from orbench.statistics.stats import wilson_interval

    root = tmp_path / "runs"
    s4 = root / "w_merged_or-bench-hard-1k.csv"
    pairs = case(5, 3, 1, 11)  # 20 rows; the judge says refusal on 8
    rows = [(f"p{i}", str(k), f"r{i}", "hate", t) for i, (t, k) in enumerate(pairs)]
    write_rows(s4, ["prompt", "is_rejected", "refusal_score", "response", "category"],
               [(p, kw, "0.9" if kw == "True" else "0.1", r, c) for p, kw, r, c, _ in rows])
    sample(root / "w_merged_or-bench-hard-1k_response_check_merged_gpt4.csv", rows, s4)
    s = rp.build_report([root]).summary.set_index("model").loc["w"]
    assert s["hard_corrected_pct"] == PCT(40.0)
    low, high = wilson_interval(8, 20)
    assert (s["hard_corrected_ci_low_pct"], s["hard_corrected_ci_high_pct"]) == (PCT(100 * low), PCT(100 * high))
