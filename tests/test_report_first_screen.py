"""The page's first screen, read without a browser: the headline rates are the summary's (the
rates the figure plots), published-set rows first, each with its interval and its counts;
what they are worth follows the judge's audit, including a judge that failed it and judged no
row (no judged sample: no section may then promise rates that are not there). The layout on
a 1366x768 screen is checked in Chromium by test_report_browser.py."""

from __future__ import annotations

import re

import pytest

from orbench import report as rp
from orbench.report.correction import interval_text
from orbench.report.first_screen import MAX_ROWS, screen
from orbench.report.rates import headline
from tests.report_audit_helpers import SHAPES, write_shape
from tests.stage_helpers import write_rows


def _report(tmp_path, shape):
    return rp.build_report([write_shape(tmp_path / "run", shape)], compare_paper=True)


@pytest.mark.parametrize("shape", SHAPES)
def test_headline_rates_are_the_figures_rates_published_rows_first(tmp_path, shape):
    report = _report(tmp_path, shape)
    s = screen(report)
    assert [g.title.split(" (")[0] for g in s.groups] == ["On the published OR-Bench sets", "On this run's own sets"]
    assert [r.model for r in s.groups[0].rows] == ["small (published sets)"]
    others = [m for m in report.summary["model"] if m != "small (published sets)"]
    assert [r.model for r in s.groups[1].rows] == others  # the summary's order (trade-off score)
    assert s.head == ["OR-Bench-Hard-1K %", "OR-Bench-Toxic %"] and s.more == 0
    summary = report.summary.set_index("model")
    for row in s.groups[0].rows + s.groups[1].rows:
        for ds, cell in zip(("hard", "toxic"), row.cells):
            rate, low, high, corrected = (v.loc[list(report.summary["model"]).index(row.model)]
                                          for v in headline(report.summary, ds, report.use_corrected))
            assert f"{cell.rate} {cell.interval}" == interval_text(rate, low, high)
            n = f"n = {summary.loc[row.model, f'{ds}_scored']}"
            judged = f" ({summary.loc[row.model, f'{ds}_judged_sample']} judged)"
            assert cell.n == n + (judged if corrected else "")
            assert bool(corrected) == (shape == "passes")  # a failed judge's correction is not used


@pytest.mark.parametrize("shape, said", [
    ("passes", "✓ Judge gpt4 passed its audit (agreement 95.0%, kappa 0.90 on 100 human-labelled responses)"),
    ("fails", "✗ Judge gpt4 failed its audit (agreement 50.0%, kappa 0.00 on 100 human-labelled responses): "
              "its verdicts are set aside; these rates are stage 4's keyword rules, unchecked."),
    ("judged nothing", "✗ No judged sample: judge gpt4 failed its audit (agreement 50.0%, kappa 0.00 on 100 "
                       "human-labelled responses), so stage 5 did not send it the rows; these rates are stage 4's "
                       "keyword rules"),
])
def test_what_the_rates_are_worth_follows_the_audit(tmp_path, shape, said):
    report = _report(tmp_path, shape)
    worth = [w.text for w in screen(report).worth]
    assert worth[0].startswith(said), worth
    # 60 prompts per rate: a small sample, with its widest interval.
    assert any(w.startswith("Small samples: 60 prompts per Hard-1K and Toxic rate, 95% intervals up to ±")
               for w in worth), worth


def test_a_judge_that_judged_nothing_is_said_so_everywhere(tmp_path):
    """No section may promise a failed judge's rates that do not exist."""
    out = tmp_path / "report"
    assert rp.main([str(write_shape(tmp_path / "run", "judged nothing")), "--output_dir", str(out)]) == 0
    page, md = ((out / name).read_text(encoding="utf-8") for name in ("report.html", "summary.md"))
    for text in (page, md):
        assert "Judge gpt4 failed its audit (kappa 0.00" in text and "nothing was judged" in text
        assert "They are shown, marked" not in text  # nothing of it is shown
        assert "its rates and corrected rates are in the details" not in text  # the ✗ footnote: no ✗ row
    assert "No row was judged: judge gpt4 failed its audit" in page  # the disagreements view
    # A judge that failed but did judge its sample: its rates are there, marked.
    out = tmp_path / "report_fails"
    assert rp.main([str(write_shape(tmp_path / "run_fails", "fails")), "--output_dir", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "They are shown, marked" in page and "its rates and corrected rates are in the details" in page
    assert "No judged sample" not in page


def test_many_models_leave_the_rest_to_the_summary(tmp_path):
    root = tmp_path / "many"
    for i in range(MAX_ROWS + 3):
        for name, refused in (("or-bench-hard-1k", i), ("or-bench-toxic", 20 - i)):
            write_rows(root / f"m{i:02d}_merged_{name}.csv", ["prompt", "is_rejected", "response", "category"],
                       [(f"p{j}", str(j < refused), "r", "hate") for j in range(20)])
    report = rp.build_report([root])
    s = screen(report)
    assert len(s.groups) == 1 and s.groups[0].title == "" and s.more == 3
    assert [r.model for r in s.groups[0].rows] == list(report.summary["model"][:MAX_ROWS])
    assert [w.text for w in s.worth][0].startswith("No judge: these are stage 4's keyword rules")


def test_the_page_opens_on_the_figure_and_links_down_to_what_was_drawn(tmp_path):
    out = tmp_path / "report"
    assert rp.main([str(write_shape(tmp_path / "run", "fails")), "--output_dir", str(out), "--compare_paper"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    first = page.index('<section class="first"')
    assert first < page.index("data:image/svg+xml") < page.index('<table class="headline">') < page.index('id="summary"')
    contents = re.search(r'<nav class="contents">(.*?)</nav>', page).group(1)
    anchors = re.findall(r'href="#([a-z]+)"', contents)
    assert anchors == ["summary", "warnings", "judges", "corrections", "categories", "models", "examples",
                       "disagreements", "files"]
    assert all(f'id="{a}"' in page for a in anchors)
    # The long parts are folded, closed: method notes, the audit's rule, the corrections, the charts, the rows.
    for words in ("How these rates are computed", "How the audit works", "judged sample(s): keyword vs. judge",
                  "A table per set", "A chart per model", "Show the ", "result file(s) read"):
        assert re.search(r'<details class="[a-z-]+"( id="[a-z-]+")?><summary>[^<]*' + re.escape(words), page), words


def test_a_judge_whose_audit_is_unfinished_holds_its_rows_and_the_screen_says_so(tmp_path):
    import json

    from orbench.judge_audit.scoring import AuditCounts
    from tests.report_audit_helpers import audit_record

    root = write_shape(tmp_path / "run", "judged nothing")
    unfinished = audit_record("gpt4", AuditCounts(tp=20, fn=0, fp=20, tn=0, failed_refusals=30, failed_answers=30))
    assert unfinished["verdict"] == "incomplete"
    for record in (root / "6_judged").glob("*.run.json"):
        info = json.loads(record.read_text(encoding="utf-8"))
        info.update(audit=unfinished, judge_skipped={**info["judge_skipped"], "reason": "incomplete"})
        record.write_text(json.dumps(info), encoding="utf-8")
    worth = [w.text for w in screen(rp.build_report([root])).worth]
    assert worth[0].startswith("Judge gpt4's audit is incomplete (agreement ")
    assert "the rows of 9 stage-5 file(s) wait for it (run stage 5 again to finish it)" in worth[0]


def test_a_judge_that_passed_a_small_audit_is_not_called_good(tmp_path):
    from orbench.judge_audit.scoring import AuditCounts
    from tests.report_audit_helpers import audit_record, write_model

    small = audit_record("gpt4", AuditCounts(tp=10, fn=0, fp=0, tn=10))
    assert small["verdict"] == "passed" and small["size"] == 20
    write_model(tmp_path / "run", "m", "gpt4", small)
    worth = screen(rp.build_report([tmp_path / "run"])).worth
    assert worth[0].warn and worth[0].text.startswith(
        "Judge gpt4 passed a small audit (agreement 100.0%, kappa 1.00 on 20 human-labelled responses): too few rows")
