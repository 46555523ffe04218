"""The report, built from small synthetic result files, checked against hand counts."""

import json
import math
import re
from pathlib import Path

import pytest

import orbench
from orbench import report as rp
from orbench.protocol.constants import CATEGORIES
from orbench.statistics.stats import spearman
from tests.stage_helpers import write_rows

Z = 1.959963984540054


def wilson_pct(k, n):
    """The Wilson 95% interval in percent, written out (not the code under test)."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return 100 * (centre - half), 100 * (centre + half)



def stage4(path, verdicts):
    """verdicts: (category, is_rejected) pairs."""
    return write_rows(path, ["prompt", "is_rejected", "response", "category"],
                     [(f"p{i}", v, f"r{i}", c) for i, (c, v) in enumerate(verdicts)])


def failed(path, categories):
    return write_rows(path, ["prompt", "error", "category"],
                     [(f"f{i}", "timeout", c) for i, c in enumerate(categories)])


def judged(path, verdicts):
    return write_rows(path, ["prompt", "answer_category", "answer_type_response", "response", "category"],
                     [(f"p{i}", v, f"[[{v}]]", f"r{i}", c) for i, (c, v) in enumerate(verdicts)])


@pytest.fixture()
def results_dir(tmp_path):
    """Three models. Hand counts are in the comments."""
    root = tmp_path / "runs"
    a = root / "final_alpha_results"
    # alpha, hard, keyword: refused 3, answered 3, unscored 2 (empty, filtered); failed 2.
    stage4(a / "alpha_merged_or-bench-hard-1k.csv", [
        ("illegal", "True"), ("illegal", "True"), ("illegal", "False"), ("illegal", "empty"),
        ("privacy", "True"), ("privacy", "False"), ("privacy", "False"), ("privacy", "filtered")])
    failed(a / "alpha_failed_or-bench-hard-1k.csv", ["illegal", "privacy"])
    # alpha, toxic: 4 of 5 refused.
    stage4(a / "alpha_merged_or-bench-toxic.csv", [
        ("hate", "True"), ("hate", "True"), ("hate", "True"), ("violence", "True"),
        ("violence", "False")])
    b = root / "final_beta_results"
    # beta, hard: keywords say 0 of 4 refused; the judge says 2 refused, 1 answered,
    # 1 unscored, 1 judge call failed; plus 1 failed stage-4 request.
    stage4(b / "beta_merged_or-bench-hard-1k.csv", [("illegal", "False")] * 4)
    failed(b / "beta_failed_or-bench-hard-1k.csv", ["illegal"])
    judged(b / "beta_merged_or-bench-hard-1k_response_check_merged_gpt4.csv", [
        ("illegal", "direct_refusal"), ("illegal", "indirect_refusal"),
        ("illegal", "direct_answer"), ("illegal", "unscored")])
    failed(b / "beta_merged_or-bench-hard-1k_response_check_failed_gpt4.csv", ["illegal"])
    # beta, toxic: 2 of 4.
    stage4(b / "beta_merged_or-bench-toxic.csv", [
        ("hate", "True"), ("hate", "False"), ("sexual", "True"), ("sexual", "False")])
    g = root / "final_gamma_results"
    # gamma, hard, split files: 1 rejected, 3 accepted -> 25%; toxic: 4 of 4.
    stage4(g / "gamma_rejected_or-bench-hard-1k.csv", [("deception", "True")])
    stage4(g / "gamma_accepted_or-bench-hard-1k.csv", [("deception", "False")] * 3)
    stage4(g / "gamma_merged_or-bench-toxic.csv", [("hate", "True")] * 4)
    # Files a folder scan must skip.
    write_rows(root / "or-bench-hard-1k.csv", ["prompt", "category"], [("x", "hate")])
    write_rows(root / "harmful_rewrite_moderation_merged_gpt4_prompt.csv",
              ["prompt", "category", "is_toxic", "moderation_result"], [("x", "hate", "True", "")])
    return root


def row(summary, model):
    return summary.set_index("model").loc[model]


def test_rates_cis_and_counts(results_dir):
    rep = rp.build_report([results_dir])
    s = rep.summary
    assert set(s["model"]) == {"alpha", "beta", "gamma"}
    a = row(s, "alpha")
    assert (a["hard_refused"], a["hard_scored"], a["hard_unscored"], a["hard_failed"]) == (3, 6, 2, 2)
    assert a["hard_rejection_pct"] == pytest.approx(50.0)
    lo, hi = wilson_pct(3, 6)
    assert a["hard_ci_low_pct"] == pytest.approx(lo, abs=1e-9)
    assert a["hard_ci_high_pct"] == pytest.approx(hi, abs=1e-9)
    assert a["toxic_rejection_pct"] == pytest.approx(80.0)
    lo, hi = wilson_pct(4, 5)
    assert (a["toxic_ci_low_pct"], a["toxic_ci_high_pct"]) == (pytest.approx(lo), pytest.approx(hi))
    assert a["hard_scored_by"] == "keyword"
    g = row(s, "gamma")
    assert g["hard_rejection_pct"] == pytest.approx(25.0)
    assert (g["hard_scored"], g["hard_unscored"], g["hard_failed"]) == (4, 0, 0)
    assert g["toxic_rejection_pct"] == pytest.approx(100.0)
    lo, hi = wilson_pct(4, 4)
    assert g["toxic_ci_low_pct"] == pytest.approx(lo)
    assert g["toxic_ci_high_pct"] == pytest.approx(100.0)


def test_judge_takes_precedence_and_failures_stay_apart(results_dir):
    b = row(rp.build_report([results_dir]).summary, "beta")
    assert b["hard_scored_by"] == "judge:gpt4"
    # 2 refusals of 3 scored; the unscored verdict and both failures are counted apart.
    assert (b["hard_refused"], b["hard_scored"], b["hard_unscored"], b["hard_failed"]) == (2, 3, 1, 2)
    assert b["hard_rejection_pct"] == pytest.approx(200 / 3)
    lo, hi = wilson_pct(2, 3)
    assert b["hard_ci_low_pct"] == pytest.approx(lo)
    assert b["hard_ci_high_pct"] == pytest.approx(hi)
    assert b["toxic_scored_by"] == "keyword"

    k = row(rp.build_report([results_dir], prefer="keyword").summary, "beta")
    assert k["hard_scored_by"] == "keyword"
    assert (k["hard_refused"], k["hard_scored"], k["hard_unscored"], k["hard_failed"]) == (0, 4, 0, 1)


def test_sorted_by_tradeoff_score(results_dir):
    s = rp.build_report([results_dir]).summary
    # toxic - hard: gamma 100 - 25 = 75, alpha 80 - 50 = 30, beta 50 - 66.7 = -16.7.
    assert list(s["model"]) == ["gamma", "alpha", "beta"]
    assert list(s["tradeoff_score"]) == pytest.approx([75.0, 30.0, 50 - 200 / 3])


def test_category_table(results_dir):
    rep = rp.build_report([results_dir])
    c = rep.categories.set_index(["model", "dataset", "category"])
    ill = c.loc[("alpha", "hard", "illegal")]
    # illegal: True, True, False, empty, plus one failed request.
    assert (ill["refused"], ill["scored"], ill["unscored"], ill["failed"]) == (2, 3, 1, 1)
    assert ill["rejection_pct"] == pytest.approx(200 / 3)
    lo, hi = wilson_pct(2, 3)
    assert ill["ci_low_pct"] == pytest.approx(lo)
    priv = c.loc[("alpha", "hard", "privacy")]
    assert (priv["refused"], priv["scored"], priv["unscored"], priv["failed"]) == (1, 3, 1, 1)
    assert c.loc[("alpha", "toxic", "violence")]["rejection_pct"] == pytest.approx(50.0)
    assert c.loc[("beta", "toxic", "sexual")]["rejection_pct"] == pytest.approx(50.0)
    # The paper's category order within a model and dataset.
    alpha_toxic = rep.categories.query("model == 'alpha' and dataset == 'toxic'")["category"]
    assert list(alpha_toxic) == ["hate", "violence"]
    assert CATEGORIES.index("hate") < CATEGORIES.index("violence")
    md = rp.category_markdown(rep)
    assert "66.7 (2/3)" in md and "## OR-Bench-Hard-1K" in md


def test_writes_every_file_and_html_is_self_contained(results_dir, tmp_path, capsys):
    out = tmp_path / "report"
    assert rp.main([str(results_dir), "--output_dir", str(out), "--compare_paper"]) == 0
    for name in ("summary.csv", "summary.md", "per_category.csv", "per_category.md",
                 "tradeoff.png", "tradeoff.svg", "report.html"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    for model in ("alpha", "beta", "gamma"):
        assert (out / "models" / f"{model}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (out / "tradeoff.svg").read_text(encoding="utf-8")

    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/svg+xml;base64,") == 1
    assert page.count("data:image/png;base64,") == 3
    # Nothing fetched from elsewhere: no external src/href, stylesheets or url().
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page, re.I)
    assert "<link" not in page.lower() and "url(" not in page.lower()
    assert "@import" not in page
    assert 'class="sortable"' in page and "<script>" in page
    assert "trade-off score" in page and "Wilson" in page
    assert page.count('<tr class="paper">') == 32

    md = (out / "summary.md").read_text(encoding="utf-8")
    assert "Sorted by trade-off score" in md and "Wilson" in md
    assert "50.0 [" in md
    assert "report written to" in capsys.readouterr().out


def test_dataset_inference_rule():
    assert rp.infer_dataset("or-bench-hard-1k.csv") == "hard"
    assert rp.infer_dataset("or-bench-toxic.csv") == "toxic"
    assert rp.infer_dataset("or-bench-80k.csv") == "safe"
    assert rp.infer_dataset("my_safe_prompts.csv") == "safe"
    assert rp.infer_dataset("prompts.csv") is None
    assert rp.infer_dataset("hard_toxic_mix.csv") is None
    # The model part of the name never decides: "safety" is in the model here.
    info = rp.parse_result_name("llama-safety_merged_or-bench-hard-1k.csv")
    assert info["token"] == "llama-safety" and rp.infer_dataset(info["input"]) == "hard"
    info = rp.parse_result_name("gpt4_merged_or-bench-toxic_response_check_merged_llama-3-70b.csv")
    assert (info["stage"], info["token"], info["judge"]) == (5, "gpt4", "llama-3-70b")
    assert rp.parse_result_name("harm_moderation_failed_gpt4_prompt.csv") is None


def test_unknown_dataset_is_one_line_exit_2(tmp_path, capsys):
    f = stage4(tmp_path / "m_merged_prompts.csv", [("hate", "True")])
    assert rp.main([str(f), "--output_dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "--dataset" in err
    # The overrides fix it, either spelling.
    assert rp.main([str(f), "--output_dir", str(tmp_path / "o"), "--dataset", f"{f.name}=toxic"]) == 0
    assert rp.main(["--output_dir", str(tmp_path / "o2"), "--hard", str(f)]) == 0
    s = rp.build_report([f], {str(f): "hard"}).summary
    assert s.loc[0, "hard_rejection_pct"] == 100.0


@pytest.mark.parametrize("case", ["no_inputs", "missing", "empty", "encoding", "column", "judge_column",
                                  "bad_dataset"])
def test_user_errors_exit_2(tmp_path, capsys, case):
    out = ["--output_dir", str(tmp_path / "o")]
    if case == "no_inputs":
        argv = out
    elif case == "missing":
        argv = [str(tmp_path / "nope_merged_or-bench-hard-1k.csv")] + out
    elif case == "empty":
        p = tmp_path / "m_merged_or-bench-hard-1k.csv"
        p.write_text("")
        argv = [str(p)] + out
    elif case == "encoding":
        p = tmp_path / "m_merged_or-bench-hard-1k.csv"
        p.write_bytes("prompt,is_rejected,category\ncaf\xe9,True,hate\n".encode("latin-1"))
        argv = [str(p)] + out
    elif case == "column":
        p = write_rows(tmp_path / "m_merged_or-bench-hard-1k.csv", ["prompt", "verdict"], [("a", "b")])
        argv = [str(p)] + out
    elif case == "judge_column":
        p = write_rows(tmp_path / "m_merged_or-bench-hard-1k_response_check_merged_j.csv",
                      ["prompt", "response"], [("a", "b")])
        argv = [str(p)] + out
    else:
        p = stage4(tmp_path / "m_merged_or-bench-hard-1k.csv", [("hate", "True")])
        argv = [str(p), "--dataset", f"{p.name}=medium"] + out
    assert rp.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("orbench.report: error:")


def test_header_only_file_is_not_an_error(tmp_path):
    f = write_rows(tmp_path / "m_failed_or-bench-hard-1k.csv", ["prompt", "error", "category"], [])
    g = stage4(tmp_path / "m_merged_or-bench-hard-1k.csv", [("hate", "False")])
    s = rp.build_report([f, g]).summary
    assert s.loc[0, "hard_failed"] == 0 and s.loc[0, "hard_scored"] == 1


def test_run_json_names_the_model(tmp_path):
    d = tmp_path / "final_gpt4_results"
    f = stage4(d / "gpt4_merged_or-bench-hard-1k.csv", [("hate", "True"), ("hate", "False")])
    (d / "gpt4_merged_or-bench-hard-1k.run.json").write_text(json.dumps(
        {"stage": 4, "model": "gpt-4-turbo-2024-04-09", "complete": False, "rows": 2}))
    failed(d / "gpt4_failed_or-bench-hard-1k.csv", ["hate"])
    j = judged(d / "gpt4_merged_or-bench-hard-1k_response_check_merged_llama3.csv",
               [("hate", "direct_refusal")])
    (d / "gpt4_merged_or-bench-hard-1k_response_check_merged_llama3.run.json").write_text(
        json.dumps({"stage": 5, "check_model": "Llama-3-70b", "complete": True}))
    rep = rp.build_report([d])
    assert {f.model for f in rep.files} == {"gpt-4-turbo-2024-04-09"}
    assert {f.judge for f in rep.files if f.stage == 5} == {"Llama-3-70b"}
    s = rep.summary
    assert list(s["model"]) == ["gpt-4-turbo-2024-04-09"]
    assert s.loc[0, "hard_scored_by"] == "judge:Llama-3-70b"
    assert (s.loc[0, "hard_scored"], s.loc[0, "hard_failed"]) == (1, 1)
    assert any("not complete" in n for n in rep.notes)
    assert f.exists() and j.exists()


def test_two_judges_need_a_choice(results_dir):
    b = results_dir / "final_beta_results"
    judged(b / "beta_merged_or-bench-hard-1k_response_check_merged_llama3.csv",
           [("illegal", "direct_answer")])
    with pytest.raises(rp.ReportError, match="--judge"):
        rp.build_report([results_dir])
    s = rp.build_report([results_dir], judge="llama3").summary
    assert row(s, "beta")["hard_rejection_pct"] == 0.0


def test_duplicate_inputs_are_refused(results_dir, tmp_path):
    copy = tmp_path / "elsewhere" / "alpha_merged_or-bench-hard-1k.csv"
    copy.parent.mkdir()
    copy.write_bytes((results_dir / "final_alpha_results" / "alpha_merged_or-bench-hard-1k.csv").read_bytes())
    with pytest.raises(rp.ReportError, match="several merged files"):
        rp.build_report([results_dir, copy])
    # The same file given twice (directly and through its folder) is read once.
    again = results_dir / "final_alpha_results" / "alpha_merged_or-bench-hard-1k.csv"
    s = rp.build_report([results_dir, again]).summary
    assert row(s, "alpha")["hard_scored"] == 6


def test_paper_figure_1_from_package_data(tmp_path):
    paper = rp.load_paper_results()
    pts = rp.paper_points(paper)
    assert len(pts) == 32 and pts["model"].is_unique
    res = spearman(pts["hard_pct"], pts["toxic_pct"])
    assert round(res.rho, 3) == 0.893
    assert res.n == 32 and res.pvalue < 1e-10
    assert pts["ensemble_judge"].sum() == 3

    fig = rp.plot_tradeoff(rp.summarize(rp.select_verdicts(rp.read_results([]))),
                           tmp_path / "fig", paper=paper)
    assert fig.paper_points == 32 and fig.points == 0
    assert round(fig.paper_spearman.rho, 3) == 0.893
    assert "0.893" in fig.svg.read_text(encoding="utf-8")

    # The command alone renders the paper's figure.
    out = tmp_path / "paper_only"
    assert rp.main(["--compare_paper", "--output_dir", str(out)]) == 0
    assert (out / "tradeoff.png").is_file() and (out / "report.html").is_file()


def test_paper_copy_matches_its_source_note():
    here = Path(orbench.__file__).parent / "data"
    assert (here / "paper_results.csv").is_file()
    assert "2405.20947" in (here / "PAPER_RESULTS_SOURCE.md").read_text(encoding="utf-8")


def test_many_models_figure_has_no_label_overlaps(tmp_path):
    # 34 models of your own beside the paper's 32: 66 labels, none may overlap another.
    root = tmp_path / "many"
    for i in range(34):
        h = (i * 37) % 97 + 2                # spread over the x axis
        t = 55 + (i * 53) % 45               # and over the upper half of y
        stage4(root / f"model-{i:02d}_merged_or-bench-hard-1k.csv",
               [("hate", "True")] * h + [("hate", "False")] * (100 - h))
        stage4(root / f"model-{i:02d}_merged_or-bench-toxic.csv",
               [("hate", "True")] * t + [("hate", "False")] * (100 - t))
    rep = rp.build_report([root], compare_paper=True)
    fig = rp.plot_tradeoff(rep.summary, tmp_path / "many_fig", paper=rep.paper)
    assert fig.points == 34 and fig.paper_points == 32
    assert fig.label_overlaps == 0
