"""The HTML page's tables: summary, judges, corrected rates, per category, input files.

Each function turns the report into rows of cells (htmlkit.Tr, Td) and has a template
(templates/kit.html.j2, tables.html.j2) draw them; the engine escapes every cell.
"""

from __future__ import annotations

import math

from orbench.report.build import Report
from orbench.report.common import DATASET_TITLES, fmt
from orbench.report.correction import correction_rows
from orbench.report.htmlkit import Tr, macros, table, td
from orbench.report.judges import JUDGES_HEAD, judge_rows
from orbench.report.summary_view import DETAIL_HEAD, Cell, detail_rows, footnotes, main_head, main_rows
from orbench.report.markdown import CATEGORY_CORRECTION_HEAD, category_corrections_rows, category_tables


def _row(row: list[Cell]) -> Tr:
    return Tr([td(c.text, c.value, " ".join(k for k in (c.mark, "wrap" if c.wrap else "") if k)) for c in row])


def summary_html(report: Report) -> str:
    """The user's own models, best trade-off first: the rates the figure and the score use,
    then (folded) the details per model and set. The paper's rows are in paper_html."""
    tables = macros("tables.html.j2")
    if report.summary.empty:
        return tables.no_results()
    return tables.summary(main_head(report), [_row(r) for r in main_rows(report)], footnotes(report),
                          DETAIL_HEAD, [_row(r) for r in detail_rows(report)])


def judges_html(report: Report) -> str:
    rows = judge_rows(report.judges)
    if not rows:
        return ""
    body = []
    for row in rows:
        cells = [td(row[h]) for h in JUDGES_HEAD[:-1]]
        cells.append(td(row["verdict"], cls="warn wrap" if row["_status"] in ("failed", "incomplete", "not audited")
                        else "wrap"))
        body.append(Tr(cells))
    return table(JUDGES_HEAD, body)


def paper_html(report: Report) -> str:
    """The paper's published rates, best trade-off first; "" without --compare_paper."""
    paper = report.paper
    if paper is None:
        return ""
    head = ["model (paper)", f"{DATASET_TITLES['hard']} %", f"{DATASET_TITLES['toxic']} %",
            "trade-off score"]
    body: list[tuple[float, Tr]] = []
    for _, r in paper.iterrows():
        hard, toxic = float(r["hard_1k_rejection_pct"]), float(r["toxic_rejection_pct"])
        # The paper has no 80K rates: no score when x is the safe set.
        score = toxic - hard if report.x == "hard" else math.nan
        cells = [td(r["model"] + ("*" if r["ensemble_judge"] else "")), td(fmt(hard), hard),
                 td(fmt(toxic), toxic), td(fmt(score), score)]
        body.append((score, Tr(cells, "paper")))
    body.sort(key=lambda sr: (math.isnan(sr[0]), -sr[0] if not math.isnan(sr[0]) else 0.0))
    return table(head, [row for _, row in body])


def category_html(report: Report) -> str:
    """One table per set: a row per model, a column per category."""
    tables = macros("tables.html.j2")
    if report.categories.empty:
        return tables.no_results()
    groups = [(DATASET_TITLES[ds], ["model", *names],
               [Tr([td(model)] + [td(text, rate) for text, rate in cells]) for model, cells in rows])
              for ds, names, rows in category_tables(report.categories)]
    return tables.categories(groups)


def corrections_html(report: Report) -> str:
    """Keyword vs judge on each judged sample, and the corrected rate."""
    rows = correction_rows(report.corrections)
    if not rows:
        return ""
    head = [h for h in rows[0] if not h.startswith("_")]
    out = []
    for row in rows:
        # The model's name, the set and the ± cell may wrap, so that the table fits a 1,400 px window.
        cells = ([td(row[h], cls="name" if h in ("model", "set", "± (estimator, design)") else "") for h in head[:-1]]
                 + [td(row[head[-1]], cls="warn wrap" if row["_unreliable"] else "wrap")])
        out.append(Tr(cells, "unreliable" if row["_unreliable"] else ""))
    return table(head, out, wide=True)


def category_corrections_html(report: Report) -> str:
    rows = category_corrections_rows(report)
    return table(CATEGORY_CORRECTION_HEAD, [Tr([td(c) for c in r]) for r in rows]) if rows else ""


def files_html(report: Report) -> str:
    head = ["file", "model", "dataset", "stage", "kind", "judge", "judged sample of", "complete"]
    rows = []
    for f in report.files:
        done = "?" if f.complete is None else ("yes" if f.complete else "NO")
        if f.record is not None and f.record.judge_skipped is not None and f.kind != "failed":
            done = "rows not sent: " + ("the judge failed its audit" if f.record.judge_skipped.get("reason") == "failed"
                                        else "its audit is incomplete")
        sample = f.sample_of.name if f.sample_of is not None else "–"
        cells = [td(f.path.name, cls="path")] + [td(v) for v in (f.model, f.dataset, f.stage, f.kind, f.judge or "–")]
        rows.append(Tr(cells + [td(sample, cls="path"), td(done)]))
    return table(head, rows)
