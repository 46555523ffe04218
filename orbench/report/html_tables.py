"""The HTML page's tables: summary, corrected rates, per category, input files."""

from __future__ import annotations

import html
import math

from orbench.report.build import Report
from orbench.report.common import DATASET_TITLES, DATASETS, category_order, fmt
from orbench.report.correction import correction_rows, has_corrections, interval_text
from orbench.report.htmlkit import table, td
from orbench.report.markdown import CATEGORY_CORRECTION_HEAD, category_corrections_rows
from orbench.report.rates import summary_datasets


def summary_html(report: Report) -> str:
    """The user's own models, best trade-off first (the paper's rows are in paper_html)."""
    summary = report.summary
    if summary.empty:
        return "<p>No results of your own.</p>"
    show = summary_datasets(summary)
    corrected = {ds: has_corrections(summary, ds) for ds in show}
    head = ["model"]
    for ds in show:
        t = DATASET_TITLES[ds]
        head += [f"{t} %", "95% CI", "scored", "unscored", "failed", "scored by"]
        if corrected[ds]:
            head += [f"{t} corrected % [95% CI]"]
    head.append("trade-off score")
    body: list[str] = []
    for _, r in summary.iterrows():  # already in the summary's order
        cells = [td(r["model"])]
        unreliable = False
        for ds in show:
            rate = float(r[f"{ds}_rejection_pct"])
            ci = ("–" if math.isnan(rate)
                  else f"{r[f'{ds}_ci_low_pct']:.1f}–{r[f'{ds}_ci_high_pct']:.1f}")
            by = r[f"{ds}_scored_by"]
            cells += [td(fmt(rate), rate), td(ci, float(r[f"{ds}_ci_low_pct"])),
                      td(r[f"{ds}_scored"], r[f"{ds}_scored"]),
                      td(r[f"{ds}_unscored"], r[f"{ds}_unscored"]),
                      td(r[f"{ds}_failed"], r[f"{ds}_failed"]),
                      td(by if isinstance(by, str) else "–")]
            if corrected[ds]:
                value = float(r[f"{ds}_corrected_pct"])
                text = interval_text(value, r[f"{ds}_corrected_ci_low_pct"], r[f"{ds}_corrected_ci_high_pct"])
                warn = r[f"{ds}_keyword_unreliable"] == "True"
                unreliable |= warn
                cell = td(text + (" ⚠" if warn else ""), value)
                cells.append(cell.replace("<td", '<td class="warn"', 1) if warn else cell)
        score = float(r["tradeoff_score"])
        cells.append(td(fmt(score), score))
        body.append(('<tr class="unreliable">' if unreliable else "<tr>") + "".join(cells) + "</tr>")
    return table(head, body, wide=True)


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
        cells = [td(row[h]) for h in head]
        if row["_unreliable"]:
            cells[-1] = cells[-1].replace("<td", '<td class="warn"', 1)
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
        rows.append("<tr>" + "".join(td(v) for v in (
            f.path.name, f.model, f.dataset, f.stage, f.kind, f.judge or "–", sample, done)) + "</tr>")
    return table(head, rows)
