"""The summary as a reader meets it, for the page and summary.md alike.

- The main table holds what people came for: per model the Hard-1K and Toxic rates (the ones
  the figure and the trade-off score use, with their 95% intervals), the score, the 80K rate,
  and where the rates come from. It fits 1,400 px.
- The details table (folded on the page) has one row per model and set: the chosen verdicts'
  rate and counts, the corrected rate, and what the judge's audit found, including rates set
  aside because their judge failed its audit (marked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orbench.report.build import Report
from orbench.report.common import DATASET_TITLES, fmt
from orbench.report.correction import interval_text
from orbench.report.rates import headline, summary_datasets

SHORT = {"safe": "80K", "hard": "Hard-1K", "toxic": "Toxic"}
SELF_BUILT_MARK = "†"
SET_ASIDE_MARK = "✗"


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | str | None = None  # what a sortable column sorts by
    mark: str = ""  # "warn" (shown, not used) or "" (plain)
    wrap: bool = False  # words, not a number: may wrap on the page


def _order(report: Report) -> list[str]:
    present = summary_datasets(report.summary)
    first = [report.x, "toxic"] if report.x in present else ["toxic"]
    return [ds for ds in first if ds in present], [ds for ds in present if ds not in first]


def main_head(report: Report) -> list[str]:
    lead, rest = _order(report)
    head = ["model"] + [f"{DATASET_TITLES[ds]} % [95% CI]" for ds in lead] + ["trade-off score"]
    return head + [f"{DATASET_TITLES[ds]} % [95% CI]" for ds in rest] + ["rates from"]


def _basis(row, ds: str, corrected: bool) -> str:
    if corrected:
        return f"corrected by {row[f'{ds}_sample_judge']}"
    by = row[f"{ds}_scored_by"]
    if not isinstance(by, str) or not by:
        return ""
    return "keyword rules" if by == "keyword" else f"judge {by.split(':', 1)[1]}"


def _self_built(report: Report) -> set[str]:
    return {m for b in report.self_built for m in b.tested}


def main_rows(report: Report) -> list[list[Cell]]:
    lead, rest = _order(report)
    summary = report.summary
    heads = {ds: headline(summary, ds, report.use_corrected) for ds in lead + rest}
    flagged = _self_built(report)
    rows = []
    for i, r in summary.iterrows():
        cells = [Cell(str(r["model"]))]
        bases: dict[str, list[str]] = {}
        for ds in lead + rest:
            rate, low, high, corrected = (s.loc[i] for s in heads[ds])
            text = interval_text(rate, low, high)
            if ds == "hard" and r["model"] in flagged and text != "–":
                text += f" {SELF_BUILT_MARK}"
            cells.append(Cell(text, float(rate)))
            basis = _basis(r, ds, bool(corrected))
            if basis and not math.isnan(rate):
                bases.setdefault(basis, []).append(SHORT[ds])
            if ds == lead[-1]:
                score = float(r["tradeoff_score"])
                cells.append(Cell(fmt(score), score))
        from_text = "; ".join(f"{b} ({', '.join(s)})" if len(bases) > 1 else b for b, s in bases.items())
        aside = sorted({str(r.get(f"{ds}_sample_judge")) for ds in lead + rest
                        if r.get(f"{ds}_sample_judge_audit") == "failed"}
                       | {str(r.get(f"{ds}_set_aside_judge")) for ds in lead + rest if r.get(f"{ds}_set_aside_judge")})
        if aside:
            from_text += f"; judge {', '.join(aside)} set aside {SET_ASIDE_MARK}"
        cells.append(Cell(from_text or "–", mark="warn" if aside else "", wrap=True))
        rows.append(cells)
    return rows


DETAIL_HEAD = ["model", "set", "rate % [95% CI]", "scored", "unscored", "failed", "scored by",
               "corrected % [95% CI]", "judged rows", "judge's audit"]


def _audit_words(report: Report, judge: str) -> str:
    audit = report.judges.get(judge)
    return audit.status if audit is not None else "–"


def detail_rows(report: Report) -> list[list[Cell]]:
    """One row per (model, set) with rates: the chosen verdicts, the corrected rate (marked
    when set aside), and any judge rate set aside."""
    lead, rest = _order(report)
    rows = []
    for _, r in report.summary.iterrows():
        for ds in lead + rest:
            rate = float(r[f"{ds}_rejection_pct"])
            corr = float(r[f"{ds}_corrected_pct"])
            aside = float(r.get(f"{ds}_set_aside_judge_pct", math.nan))
            if math.isnan(rate) and math.isnan(corr) and math.isnan(aside):
                continue
            by = r[f"{ds}_scored_by"] if isinstance(r[f"{ds}_scored_by"], str) else "–"
            judge = r[f"{ds}_sample_judge"] or (r.get(f"{ds}_set_aside_judge") or "")
            if not judge and by.startswith("judge:"):
                judge = by.split(":", 1)[1]
            corr_cell = Cell(interval_text(corr, r[f"{ds}_corrected_ci_low_pct"], r[f"{ds}_corrected_ci_high_pct"]), corr)
            if not math.isnan(corr) and r[f"{ds}_corrected_used"] == "False":
                corr_cell = Cell(corr_cell.text + f" {SET_ASIDE_MARK} not used", corr, "warn")
            elif r[f"{ds}_keyword_unreliable"] == "True":
                corr_cell = Cell(corr_cell.text + " ⚠", corr, "warn")
            rate_cell = Cell(interval_text(rate, r[f"{ds}_ci_low_pct"], r[f"{ds}_ci_high_pct"]), rate)
            if not math.isnan(aside):
                by += (f"; judge {r[f'{ds}_set_aside_judge']}: {fmt(aside)}% {SET_ASIDE_MARK} not used")
            rows.append([Cell(str(r["model"])), Cell(SHORT[ds]), rate_cell,
                         Cell(str(r[f"{ds}_scored"]), int(r[f"{ds}_scored"])),
                         Cell(str(r[f"{ds}_unscored"]), int(r[f"{ds}_unscored"])),
                         Cell(str(r[f"{ds}_failed"]), int(r[f"{ds}_failed"])),
                         Cell(by, mark="warn" if not math.isnan(aside) else "", wrap=True), corr_cell,
                         Cell(str(r[f"{ds}_judged_sample"]), int(r[f"{ds}_judged_sample"])),
                         Cell(_audit_words(report, judge) if judge else "–",
                              mark="warn" if judge and _audit_words(report, judge) == "failed" else "")])
    return rows


def footnotes(report: Report) -> list[str]:
    notes = []
    if report.self_built:
        notes.append(f"{SELF_BUILT_MARK} This model's refusals helped choose the hard set's prompts: its Hard-1K "
                     "rate is high by construction (see the warnings).")
    failed = [a for a in report.judges.values() if a.failed]
    if any(not a.nothing_judged for a in failed) and report.choice.prefer is None:
        notes.append(f"{SET_ASIDE_MARK} A judge that failed its audit: its rates and corrected rates are in the "
                     "details, marked, and used for nothing.")
    for a in failed:
        if a.nothing_judged:
            notes.append(f"Judge {a.judge} failed its audit, so stage 5 did not send it the rows: these are keyword "
                         "rates, with no judged sample to check them (see Judges).")
    return notes


def corrections_used(report: Report) -> bool:
    """Whether any headline rate is a corrected one."""
    cols = [c for c in report.summary.columns if c.endswith("_corrected_used")]
    return report.use_corrected and any((report.summary[c] == "True").any() for c in cols)


def score_basis(report: Report) -> str:
    """What the trade-off score and the figure are computed from, when corrections exist."""
    if report.corrections.empty:
        return ""
    if report.choice.prefer == "keyword":
        return (" The score and the figure use the rates of the chosen verdicts (--prefer keyword); "
                "the corrected rates are shown beside them.")
    aside = report.choice.prefer is None and any(a.failed for a in report.judges.values())
    if corrections_used(report):
        return (" The score and the figure use the corrected rate where a judge's sample gives one"
                + (" and that judge passed or was not audited." if aside else "."))
    return (" The score and the figure use the keyword rates: the judge of the samples failed its audit, "
            "so its corrected rates are shown but set aside." if aside else "")
