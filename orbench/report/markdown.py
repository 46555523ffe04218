"""The report's tables as Markdown (summary.md, per_category.md)."""

from __future__ import annotations

import math
from typing import Sequence

from orbench.tables.published import ATTRIBUTION, LABEL_SUFFIX, is_result_label
from orbench.report.build import Report
from orbench.report.common import CI_RULE, DATASET_TITLES, DATASETS, TRADEOFF_RULE, category_order, fmt
from orbench.report.correction import (
    CORRECTION_RULE,
    MIN_JUDGED_PER_CATEGORY,
    correction_rows,
    interval_text,
)
from orbench.report.judges import JUDGES_HEAD, audit_rule, judge_rows
from orbench.report.summary_view import DETAIL_HEAD, detail_rows, footnotes, main_head, main_rows, score_basis


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |",
             "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)

def _text(rows) -> list[list[str]]:
    return [[c.text for c in row] for row in rows]


def summary_markdown(report: Report) -> str:
    parts = ["# OR-Bench results", "", "## Your models", ""]
    parts += [TRADEOFF_RULE.format(x=DATASET_TITLES[report.x]) + score_basis(report),
              CI_RULE + " Rejection rate = refused / scored; unscored rows (no verdict) and "
              "failed rows (request or judge call failed) are not in the denominator.", ""]
    if report.choice.note():
        parts += [f"**{report.choice.note()}**", ""]
    if report.summary.empty:
        parts.append("_No results of your own._")
    else:
        parts.append(_md_table(main_head(report), _text(main_rows(report))))
        parts += [""] + footnotes(report)
        parts += ["", "### Details per model and set", "", _md_table(DETAIL_HEAD, _text(detail_rows(report)))]
    if report.warnings:
        parts += ["", "## Warnings", ""] + [f"- ⚠ {w}" for w in report.warnings]
    judges = judge_rows(report.judges)
    if judges:
        parts += ["", "## Judges", "", audit_rule(report.judges), "",
                  _md_table(JUDGES_HEAD, [[row[h] for h in JUDGES_HEAD] for row in judges])]
    if not report.corrections.empty:
        table = correction_rows(report.corrections)
        head = [h for h in table[0] if not h.startswith("_")]
        parts += ["", "## Keyword rules checked by a judged sample", "", CORRECTION_RULE, "",
                  _md_table(head, [[row[h] for h in head] for row in table])]
    if report.paper is not None:
        parts += ["", "## The paper's published numbers, for comparison", "",
                  _md_table(["model", "Hard-1K rejection %", "Toxic rejection %"],
                            [[str(m), fmt(a), fmt(b)] for m, a, b in zip(
                                report.paper["model"], report.paper["hard_1k_rejection_pct"],
                                report.paper["toxic_rejection_pct"])])]
    if report.notes:
        parts += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    sources = sources_note(report)
    if sources:
        parts += ["", "## Sources", "", sources]
    return "\n".join(parts) + "\n"


def sources_note(report: Report) -> str:
    """The attribution CC-BY-4.0 asks for, when a result read a published set; else ""."""
    if report.summary.empty or not any(is_result_label(m) for m in report.summary["model"]):
        return ""
    return (f"Models labelled \"{LABEL_SUFFIX.strip()}\" were measured on the published OR-Bench sets: the "
            "copies bundled with orbench, or the Hub's (each result's .run.json records which, with the "
            "file's SHA-256 under input_source). " + ATTRIBUTION)


def category_corrections_rows(report: Report) -> list[list[str]]:
    """model, set, category, rate, judged rows, corrected rate or why there is none."""
    cats = report.categories
    if cats.empty or "corrected_pct" not in cats.columns:
        return []
    rows = []
    with_sample = cats[(cats["judged_sample"] > 0) | (cats["corrected_note"] != "")]
    for _, r in with_sample.iterrows():
        why = r["corrected_note"] or ""
        cell = interval_text(r["corrected_pct"], r["corrected_ci_low_pct"], r["corrected_ci_high_pct"])
        rows.append([str(r["model"]), DATASET_TITLES[r["dataset"]], str(r["category"]),
                     f"{fmt(r['rejection_pct'])} ({r['scored_by']})", str(r["judged_sample"]),
                     cell if why == "" else f"none: {why}"])
    return rows


CATEGORY_CORRECTION_HEAD = ["model", "set", "category", "rejection % (scored by)", "judged rows",
                            "corrected % [95% CI]"]
CATEGORY_CORRECTION_RULE = (f"A category gets a corrected rate only when the judged sample holds at "
                            f"least {MIN_JUDGED_PER_CATEGORY} of its rows with a verdict from both "
                            "the judge and the keyword rules.")


def category_tables(cats) -> list[tuple[str, list[str], list[tuple[str, list[tuple[str, float]]]]]]:
    """Per set with results (report.categories): the set, its categories in order, and per
    model (model, a (text, rate) cell per category); "–" and NaN where none was scored."""
    tables = []
    for ds in DATASETS:
        sub = cats[cats["dataset"] == ds]
        if sub.empty:
            continue
        names = category_order(sub["category"])
        rows = []
        for model in dict.fromkeys(sub["model"]):
            m = sub[sub["model"] == model].set_index("category")
            cells = []
            for c in names:
                if c in m.index and m.at[c, "scored"] > 0:
                    rate = float(m.at[c, "rejection_pct"])
                    cells.append((f"{rate:.1f} ({m.at[c, 'refused']}/{m.at[c, 'scored']})", rate))
                else:
                    cells.append(("–", math.nan))
            rows.append((str(model), cells))
        tables.append((ds, names, rows))
    return tables


def category_markdown(report: Report) -> str:
    cats = report.categories
    parts = ["# Rejection rate per category", "",
             "Each cell: rejection % (refused / scored). " + CI_RULE + " The CIs are in "
             "per_category.csv.", ""]
    if cats.empty:
        return "\n".join(parts + ["_No results of your own._"]) + "\n"
    for ds, names, rows in category_tables(cats):
        cells = [[model] + [text for text, _ in row] for model, row in rows]
        parts += [f"## {DATASET_TITLES[ds]}", "", _md_table(["model"] + names, cells), ""]
    corr = category_corrections_rows(report)
    if corr:
        parts += ["## Corrected rate per category", "", CATEGORY_CORRECTION_RULE, "",
                  _md_table(CATEGORY_CORRECTION_HEAD, corr), ""]
    return "\n".join(parts)

