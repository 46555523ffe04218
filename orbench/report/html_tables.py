"""The HTML page's tables: summary, judges, corrected rates, per category, input files."""

from __future__ import annotations

import html
import math

from orbench.report.build import Report
from orbench.report.common import DATASET_TITLES, DATASETS, category_order, fmt
from orbench.report.correction import correction_rows
from orbench.report.htmlkit import table, td
from orbench.report.judges import JUDGES_HEAD, judge_rows
from orbench.report.summary_view import DETAIL_HEAD, Cell, detail_rows, footnotes, main_head, main_rows
from orbench.report.markdown import CATEGORY_CORRECTION_HEAD, category_corrections_rows


def _cells(row: list[Cell]) -> str:
    return "".join(td(c.text, c.value, " ".join(k for k in (c.mark, "wrap" if c.wrap else "") if k)) for c in row)


def summary_html(report: Report) -> str:
    """The user's own models, best trade-off first: the rates the figure and the score use,
    then (folded) the details per model and set. The paper's rows are in paper_html."""
    if report.summary.empty:
        return "<p>No results of your own.</p>"
    main = table(main_head(report), ["<tr>" + _cells(r) + "</tr>" for r in main_rows(report)])
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in footnotes(report))
    details = table(DETAIL_HEAD, ["<tr>" + _cells(r) + "</tr>" for r in detail_rows(report)])
    return (f'{main}{notes}<details class="details"><summary>Details per model and set: counts, verdict '
            f"sources, corrected rates, judges' audits</summary>{details}</details>")


def judges_html(report: Report) -> str:
    rows = judge_rows(report.judges)
    if not rows:
        return ""
    body = []
    for row in rows:
        cells = [td(row[h]) for h in JUDGES_HEAD[:-1]]
        cells.append(td(row["verdict"], cls="warn wrap" if row["_status"] in ("failed", "incomplete", "not audited")
                        else "wrap"))
        body.append("<tr>" + "".join(cells) + "</tr>")
    return table(JUDGES_HEAD, body)


def paper_html(report: Report) -> str:
    """The paper's published rates, best trade-off first; "" without --compare_paper."""
    paper = report.paper
    if paper is None:
        return ""
    head = ["model (paper)", f"{DATASET_TITLES['hard']} %", f"{DATASET_TITLES['toxic']} %",
            "trade-off score"]
    body: list[tuple[float, str]] = []
    for _, r in paper.iterrows():
        hard, toxic = float(r["hard_1k_rejection_pct"]), float(r["toxic_rejection_pct"])
        # The paper has no 80K rates: no score when x is the safe set.
        score = toxic - hard if report.x == "hard" else math.nan
        cells = [td(r["model"] + ("*" if r["ensemble_judge"] else "")), td(fmt(hard), hard),
                 td(fmt(toxic), toxic), td(fmt(score), score)]
        body.append((score, '<tr class="paper">' + "".join(cells) + "</tr>"))
    body.sort(key=lambda sr: (math.isnan(sr[0]), -sr[0] if not math.isnan(sr[0]) else 0.0))
    return table(head, [row for _, row in body])


def category_html(report: Report) -> str:
    cats = report.categories
    if cats.empty:
        return "<p>No results of your own.</p>"
    parts = []
    for ds in DATASETS:
        sub = cats[cats["dataset"] == ds]
        if sub.empty:
            continue
        names = category_order(sub["category"])
        parts.append(f"<h3>{html.escape(DATASET_TITLES[ds])}</h3>")
        parts.append('<table class="sortable"><thead><tr><th>model</th>'
                     + "".join(f"<th>{html.escape(c)}</th>" for c in names)
                     + "</tr></thead><tbody>")
        for model in dict.fromkeys(sub["model"]):
            m = sub[sub["model"] == model].set_index("category")
            cells = [td(model)]
            for c in names:
                if c in m.index and m.at[c, "scored"] > 0:
                    rate = float(m.at[c, "rejection_pct"])
                    cells.append(td(f"{rate:.1f} ({m.at[c, 'refused']}/{m.at[c, 'scored']})", rate))
                else:
                    cells.append(td("–", math.nan))
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
    return "\n".join(parts)




def corrections_html(report: Report) -> str:
    """Keyword vs judge on each judged sample, and the corrected rate."""
    rows = correction_rows(report.corrections)
    if not rows:
        return ""
    head = [h for h in rows[0] if not h.startswith("_")]
    out = []
    for row in rows:
        # The model's name and the ± cell may wrap, so that the table fits a 1,400 px window.
        cells = ([td(row[h], cls="name" if h in ("model", "set", "± (estimator, design)") else "") for h in head[:-1]]
                 + [td(row[head[-1]], cls="warn wrap" if row["_unreliable"] else "wrap")])
        out.append(("<tr class=\"unreliable\">" if row["_unreliable"] else "<tr>") + "".join(cells) + "</tr>")
    return table(head, out, wide=True)


def category_corrections_html(report: Report) -> str:
    rows = category_corrections_rows(report)
    return table(CATEGORY_CORRECTION_HEAD, ["<tr>" + "".join(td(c) for c in r) + "</tr>" for r in rows]) if rows else ""


def files_html(report: Report) -> str:
    head = ["file", "model", "dataset", "stage", "kind", "judge", "judged sample of", "complete"]
    rows = []
    for f in report.files:
        done = "?" if f.complete is None else ("yes" if f.complete else "NO")
        sample = f.sample_of.name if f.sample_of is not None else "–"
        cells = [td(f.path.name, cls="path")] + [td(v) for v in (f.model, f.dataset, f.stage, f.kind, f.judge or "–")]
        rows.append("<tr>" + "".join(cells) + td(sample, cls="path") + td(done) + "</tr>")
    return table(head, rows)
