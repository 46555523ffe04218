"""The examples and disagreements views, the cap, and your-models-first, from the Python side."""

from __future__ import annotations

import base64
import hashlib
import html
import re

import pytest
from markupsafe import escape

from orbench import report as rp
from tests.report_examples_helpers import (
    ALPHA_HARD_REFUSED,
    ALPHA_TOXIC_MISSES,
    BETA_HARD_REFUSED,
    HOSTILE,
    write_runs,
)
from tests.stage_helpers import write_rows


def _sets(examples, kind=None):
    return {(s.model, s.dataset): s for s in examples if kind is None or s.kind == kind}


def _page(tmp_path, *args):
    out = tmp_path / "out"
    assert rp.main([*map(str, args), "--output_dir", str(out)]) == 0
    return (out / "report.html").read_text(encoding="utf-8"), out


def test_examples_with_a_judge_file(tmp_path):
    rep = rp.build_report([write_runs(tmp_path / "runs")])
    ex = rep.examples
    sets = _sets(ex.examples)
    assert {k: (s.kind, s.total) for k, s in sets.items()} == {
        ("alpha", "hard"): ("over-refusals", ALPHA_HARD_REFUSED),
        ("alpha", "toxic"): ("misses", ALPHA_TOXIC_MISSES),
        ("beta", "hard"): ("over-refusals", BETA_HARD_REFUSED)}
    # The counts are the summary's: the same verdicts the rates use.
    s = rep.summary.set_index("model")
    assert s.at["alpha", "hard_refused"] == ALPHA_HARD_REFUSED
    assert s.at["beta", "hard_refused"] == BETA_HARD_REFUSED
    assert s.at["alpha", "toxic_scored"] - s.at["alpha", "toxic_refused"] == ALPHA_TOXIC_MISSES

    hard = {r.prompt: r for r in sets[("alpha", "hard")].rows}
    assert sorted(hard) == [f"hard prompt {i}" for i in (0, 2, 3, 4, 5)]
    # Row 4: the keyword rules said answered, the judge (whose verdicts the rate uses) refused.
    r4 = hard["hard prompt 4"]
    assert (r4.verdict, r4.keyword, r4.judge, r4.judge_class, r4.judge_name, r4.refusal_score) == (
        "refused", "answered", "refused", "direct_refusal", "gpt4", "0.0500")
    assert r4.scored_by == "judge:gpt4" and r4.category == "harmful"
    beta = sets[("beta", "hard")].rows
    assert [(r.keyword, r.judge, r.refusal_score, r.scored_by) for r in beta] == [
        ("refused", "", "", "keyword")] * 2
    assert all(r.verdict == "answered" for r in sets[("alpha", "toxic")].rows)

    assert ex.compared == [("alpha", "hard")]
    dis = _sets(ex.disagreements)[("alpha", "hard")]
    assert dis.total == 2
    assert [(r.prompt, r.keyword, r.judge) for r in dis.rows] == [
        ("hard prompt 1", "refused", "answered"), ("hard prompt 4", "answered", "refused")]


def test_examples_without_judge_files(tmp_path):
    rep = rp.build_report([write_runs(tmp_path / "runs", judge=False)])
    hard = _sets(rep.examples.examples)[("alpha", "hard")]
    # By the keyword rules now: rows 0, 1, 2, 3 and 5 say True.
    assert sorted(r.prompt for r in hard.rows) == [f"hard prompt {i}" for i in (0, 1, 2, 3, 5)]
    assert all(r.judge == "" and r.scored_by == "keyword" for r in hard.rows)
    assert rep.examples.compared == [] and rep.examples.disagreements == []
    page, _ = _page(tmp_path, tmp_path / "runs")
    assert 'id="examples-table"' in page and 'id="disagreements-table"' not in page
    assert "No row has both a keyword verdict and a judge" in page


def test_a_judged_sample_gives_judge_verdicts_and_disagreements(tmp_path):
    """Keyword rates, with a judged sample of the same rows paired by prompt and response."""
    root = write_runs(tmp_path / "runs", judge=False)
    stage4 = root / "final_alpha_results" / "alpha_merged_or-bench-hard-1k.csv"
    sample = write_rows(root / "sample" / "alpha_merged_or-bench-hard-1k_response_check_merged_gpt4.csv",
                       ["prompt", "answer_category", "answer_type_response", "response", "category", "is_rejected"],
                       [("hard prompt 4", "direct_refusal", "", "Sure: to open a lock you own, first...", "harmful", "False"),
                        ("hard prompt 5", "direct_refusal", "", "I cannot assist with chemistry questions.", "harmful", "True")])
    rep = rp.build_report([root], samples={str(sample): str(stage4)})
    hard = _sets(rep.examples.examples)[("alpha", "hard")]
    judged = {r.prompt: (r.judge, r.judge_name) for r in hard.rows if r.judge}
    assert judged == {"hard prompt 5": ("refused", "gpt4")}  # row 4 is not an over-refusal by keyword
    dis = _sets(rep.examples.disagreements)[("alpha", "hard")]
    assert [(r.prompt, r.verdict, r.scored_by) for r in dis.rows] == [("hard prompt 4", "answered", "keyword")]


def _many(root, n, model="many"):
    """n refused Hard-1K rows of one model, categories in turn."""
    cats = ["illegal", "privacy", "harmful"]
    return write_rows(root / f"final_{model}_results" / f"{model}_merged_or-bench-hard-1k.csv",
                     ["prompt", "is_rejected", "response", "category"],
                     [(f"prompt {i}", "True", f"I cannot, {i}.", cats[i % 3]) for i in range(n)])


def test_cap_is_a_reproducible_random_sample(tmp_path):
    _many(tmp_path / "runs", 60)

    def chosen(cap, seed):
        rep = rp.build_report([tmp_path / "runs"], examples_per_set=cap, examples_seed=seed)
        (s,) = rep.examples.examples
        assert s.total == 60 and len(s.rows) == min(cap, 60)
        return [r.prompt for r in s.rows]

    ten = chosen(10, 0)
    assert ten == chosen(10, 0)  # same seed, same rows, same order
    assert ten != [f"prompt {i}" for i in range(10)]  # not simply the first rows
    assert set(ten) < set(chosen(25, 0))  # a larger cap keeps the smaller one's rows
    assert chosen(10, 1) != ten
    assert len(chosen(500, 0)) == 60
    page, _ = _page(tmp_path, tmp_path / "runs", "--examples_per_set", "10", "--examples_seed", "7")
    assert "showing 10 of 60 rows, chosen at random with seed 7" in page
    assert page.count("<tr data-model=") == 10
    assert "Showing 10 of 10 rows" in page


def test_cap_zero_embeds_no_rows_and_a_negative_cap_is_refused(tmp_path, capsys):
    _many(tmp_path / "runs", 5)
    page, _ = _page(tmp_path, tmp_path / "runs", "--examples_per_set", "0")
    assert "<tr data-model=" not in page and 'id="examples"' not in page
    assert 'href="#examples"' not in page
    assert rp.main([str(tmp_path / "runs"), "--output_dir", str(tmp_path / "o2"),
                    "--examples_per_set", "-1"]) == 2
    assert "--examples_per_set must be 0 or more" in capsys.readouterr().err


def test_empty_sets(tmp_path):
    root = tmp_path / "runs"
    # Answers everything safe, refuses everything toxic: no over-refusals, no misses.
    write_rows(root / "final_good_results" / "good_merged_or-bench-hard-1k.csv",
              ["prompt", "is_rejected", "response", "category"], [("p", "False", "ok", "illegal")])
    write_rows(root / "final_good_results" / "good_merged_or-bench-toxic.csv",
              ["prompt", "is_rejected", "response", "category"], [("t", "True", "no", "hate")])
    # A file with a header and no rows.
    write_rows(root / "final_none_results" / "none_merged_or-bench-80k.csv",
              ["prompt", "is_rejected", "response", "category"], [])
    rep = rp.build_report([root])
    assert [(s.model, s.dataset, s.total, s.rows) for s in rep.examples.examples] == [
        ("good", "hard", 0, []), ("good", "toxic", 0, [])]
    page, _ = _page(tmp_path, root)
    assert "good · OR-Bench-Hard-1K · over-refusals (safe prompts refused): none" in page
    assert "No rows to show." in page and 'id="examples-table"' not in page
    # Nothing of your own at all: no views.
    page, _ = _page(tmp_path / "p", "--compare_paper")
    assert 'id="examples"' not in page


def test_untrusted_text_is_escaped_everywhere(tmp_path):
    root = write_runs(tmp_path / "runs")
    evil_cat = '"><script>window.__pwned=1</script>'
    write_rows(root / "final_evil_results" / "evil_merged_or-bench-hard-1k.csv",
              ["prompt", "is_rejected", "response", "category"],
              [("<b onmouseover=window.__pwned=1>hi</b>", "True", "I cannot.", evil_cat)])
    page, out = _page(tmp_path, root)
    body = page.split("<body>", 1)[1]
    # One script, the page's own; no markup from the data.
    assert page.count("<script") == 1 and "window.__pwned" not in body.split("<script>")[-1]
    for text in HOSTILE + (evil_cat, "<b onmouseover=window.__pwned=1>hi</b>"):
        assert text not in page
        assert escape(text) in page  # as the page's template engine (Jinja2) escapes it
    assert "<img src=x" not in page and 'href="javascript' not in page and "</textarea>" not in page
    assert page.count("<img ") == 1 + len(list((out / "models").glob("*.png")))
    # The category is an attribute and an option too: escaped with its quotes.
    assert f'data-cat="{escape(evil_cat)}"' in page
    assert 'data-cat="&#34;&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;"' in page
    assert f'<option value="{escape(evil_cat)}">' in page


def _sha(text):
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_content_security_policy_allows_only_the_pages_own_style_and_script(tmp_path):
    page, _ = _page(tmp_path, write_runs(tmp_path / "runs"))
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert meta and page.index(meta.group(0)) < page.index("<style>")
    policy = html.unescape(meta.group(1))
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    assert "default-src 'none'" in policy and "img-src data:" in policy
    assert f"script-src {_sha(script)}" in policy and f"style-src {_sha(style)}" in policy
    assert "unsafe" not in policy
    assert not re.search(r"<[^>]*\son[a-z]+=", page.split("<script>")[0])  # no inline handlers
    assert " style=" not in page  # style attributes would be blocked by the policy


def test_your_models_first(tmp_path):
    page, out = _page(tmp_path, write_runs(tmp_path / "runs"), "--compare_paper")
    md = (out / "summary.md").read_text(encoding="utf-8")
    mine, paper = md.index("## Your models"), md.index("## The paper's published numbers")
    assert mine < md.index("| alpha |") < md.index("| beta |") < paper < md.index("| Claude-2.1 |")
    # HTML: your table, then the paper's 32 rows folded in a <details> after it.
    start = page.index('<h2 id="summary">Summary</h2>')
    summary = page[start:page.index("<h2", start + 1)]
    folded = summary.index('<details class="paper">')
    assert summary.index("<td>alpha</td>") < folded and summary.index("<td>beta</td>") < folded
    assert summary.index('<tr class="paper">') > folded and summary.count('<tr class="paper">') == 32
    assert '<details class="paper">' in page  # closed: your models are what you came for
    # With no models of your own the paper's rows are shown open.
    page, _ = _page(tmp_path / "p", "--compare_paper")
    assert '<details class="paper" open>' in page and "No results of your own." in page


@pytest.mark.parametrize("x", ["hard", "safe"])
def test_paper_trade_off_scores_follow_x(tmp_path, x):
    rep = rp.build_report([write_runs(tmp_path / "runs")], compare_paper=True, x=x)
    from orbench.report.html_tables import paper_html
    cells = re.findall(r'<tr class="paper"><td>([^<]*)</td>.*?<td data-v="([^"]*)">[^<]*</td></tr>',
                       paper_html(rep))
    assert len(cells) == 32
    scores = [float(v) if v else None for _, v in cells]
    if x == "safe":  # the paper has no 80K rates: no score
        assert scores == [None] * 32
    else:
        assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)
