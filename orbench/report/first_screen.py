"""The page's first screen: the headline rates beside the trade-off figure, and what they are
worth in a few plain lines.

A reader opens the page to learn how the model does: its rejection rate on the hard set
(over-refusal) and on the toxic set (safety), each with its 95% interval and the number of
prompts behind it, and whether to trust them (the judge's audit, the sample sizes, a hard set
built from the tested models). Everything here is said again, in full, further down the page
(the summary, the warnings, the judges); this module only picks it and words it short.
Rows measured on the published OR-Bench sets come first: they are the ones to set beside the
paper's points. Plain values only: the template escapes every one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from orbench.judge_audit.scoring import FAILED, INCOMPLETE, NOT_AUDITED, PASSED
from orbench.tables.published import is_result_label
from orbench.report.build import Report
from orbench.report.common import DATASET_TITLES, fmt
from orbench.report.judges import FULL_AUDIT, JudgeAudit
from orbench.report.rates import headline
from orbench.report.summary_view import SELF_BUILT_MARK, SHORT

MAX_ROWS = 8  # headline rows that fit beside the figure; the rest are in the summary below
WIDE_PTS = 10.0  # a half-width above this many points is called wide
FEW_PROMPTS = 100  # a rate over fewer prompts than this is called a small sample


@dataclass(frozen=True)
class RateCell:
    rate: str  # "55.0", or "–" when there is no rate
    interval: str  # "[39.8, 69.3]", or ""
    n: str  # "n = 40", "n = 40, 10 judged", or ""
    mark: str = ""  # SELF_BUILT_MARK or ""


@dataclass(frozen=True)
class HeadRow:
    model: str
    cells: Sequence[RateCell]


@dataclass(frozen=True)
class Group:
    title: str  # "" when all rows are of one kind
    rows: Sequence[HeadRow]


@dataclass(frozen=True)
class Worth:
    text: str
    warn: bool = False


@dataclass(frozen=True)
class FirstScreen:
    head: Sequence[str]  # the rate columns' titles
    groups: Sequence[Group]
    more: int  # models not shown here (in the summary below)
    worth: Sequence[Worth] = field(default_factory=list)


def _cell(row: pd.Series, ds: str, rate: float, low: float, high: float, corrected: bool,
          flagged: bool) -> RateCell:
    if math.isnan(rate):
        return RateCell("–", "", "")
    n = f"n = {int(row[f'{ds}_scored']):,}"
    if corrected:
        n += f" ({int(row[f'{ds}_judged_sample']):,} judged)"
    return RateCell(fmt(rate), f"[{fmt(low)}, {fmt(high)}]", n,
                    SELF_BUILT_MARK if flagged and ds == "hard" else "")


def _sets(report: Report) -> list[str]:
    return [report.x, "toxic"]


def _rows(report: Report) -> list[tuple[HeadRow, float]]:
    """Every model's headline row, in the summary's order, with its widest half-width."""
    summary, sets = report.summary, _sets(report)
    heads = {ds: headline(summary, ds, report.use_corrected) if f"{ds}_rejection_pct" in summary else None
             for ds in sets}
    flagged = {m for b in report.self_built for m in b.tested}
    out = []
    for i, r in summary.iterrows():
        cells, widest = [], math.nan
        for ds in sets:
            if heads[ds] is None:
                cells.append(RateCell("–", "", ""))
                continue
            rate, low, high, corrected = (s.loc[i] for s in heads[ds])
            cells.append(_cell(r, ds, float(rate), float(low), float(high), bool(corrected), r["model"] in flagged))
            if not math.isnan(rate):
                widest = max(w for w in (widest, (float(high) - float(low)) / 2) if not math.isnan(w))
        out.append((HeadRow(str(r["model"]), cells), widest))
    return out


def _groups(rows: list[HeadRow]) -> tuple[list[Group], int]:
    published = [r for r in rows if is_result_label(r.model)]
    others = [r for r in rows if not is_result_label(r.model)]
    shown_pub = published[:MAX_ROWS]
    shown_other = others[:MAX_ROWS - len(shown_pub)]
    more = len(rows) - len(shown_pub) - len(shown_other)
    if not published or not others:
        return [Group("", shown_pub or shown_other)], more
    groups = [Group("On the published OR-Bench sets (comparable with the paper)", shown_pub)]
    if shown_other:
        groups.append(Group("On this run's own sets", shown_other))
    return groups, more


def screen(report: Report) -> FirstScreen:
    rows = _rows(report)
    groups, more = _groups([r for r, _ in rows])
    head = [f"{DATASET_TITLES[ds]} %" for ds in _sets(report)]
    return FirstScreen(head, groups, more, worth(report, rows))


def _figures(a: JudgeAudit) -> str:
    """"agreement 50.0%, kappa 0.00 on 100 human-labelled responses", or ""."""
    if not a.records:
        return ""
    deciding = a.records[-1]
    parts = []
    for key, name, unit, digits in (("agreement_pct", "agreement", "%", 1), ("kappa", "kappa", "", 2)):
        value = (deciding.get(key) or {}).get("value")
        if isinstance(value, (int, float)) and not math.isnan(value):
            parts.append(f"{name} {value:.{digits}f}{unit}")
    return ", ".join(parts) + (f" on {a.size} human-labelled responses" if a.size else "")


def _judge_line(report: Report, a: JudgeAudit, alone: bool) -> Worth:
    figures = _figures(a)
    said = f" ({figures})" if figures else ""
    these = "these rates are" if alone else "where it was to judge, the rates are"
    if a.status == FAILED and report.choice.prefer == "judge":
        return Worth(f"✗ Judge {a.judge} failed its audit{said}, yet --prefer judge uses its verdicts.", True)
    if a.status == FAILED and report.choice.prefer is None:
        if a.nothing_judged:
            return Worth(f"✗ No judged sample: judge {a.judge} failed its audit{said}, so stage 5 did not send it "
                         f"the rows; {these} stage 4's keyword rules, unchecked.", True)
        return Worth(f"✗ Judge {a.judge} failed its audit{said}: its verdicts are set aside; {these} stage 4's "
                     f"keyword rules, unchecked.", True)
    if a.status == PASSED and 0 < a.size < FULL_AUDIT:
        return Worth(f"Judge {a.judge} passed a small audit{said}: too few rows to show it is good (see "
                     f"Judges); a rate with rows “judged” is the keyword rate corrected by its sample.", True)
    if a.status == PASSED:
        return Worth(f"✓ Judge {a.judge} passed its audit{said}: a rate with rows “judged” is the keyword "
                     f"rate corrected by its sample.")
    if a.status == INCOMPLETE and a.skipped:
        return Worth(f"Judge {a.judge}'s audit is incomplete{said}: the rows of {a.skipped} stage-5 file(s) wait "
                     f"for it (run stage 5 again to finish it); where they wait, the rates are stage 4's keyword "
                     f"rules, unchecked.", True)
    if a.status == INCOMPLETE:
        return Worth(f"Judge {a.judge}'s audit is incomplete{said}: its verdicts are used unchecked.", True)
    if a.status == NOT_AUDITED:
        return Worth(f"Judge {a.judge} was not audited against human labels: its verdicts are used unchecked.",
                     True)
    return Worth(f"Judge {a.judge}: {a.status}{said}.")


def _size_line(report: Report, rows: list[tuple[HeadRow, float]]) -> Worth | None:
    sets = _sets(report)
    counts = [int(r[f"{ds}_scored"]) for _, r in report.summary.iterrows() for ds in sets
              if f"{ds}_scored" in r and int(r[f"{ds}_scored"]) > 0]
    widest = [w for _, w in rows if not math.isnan(w)]
    if not counts or not widest:
        return None
    low, high, wide = min(counts), max(counts), max(widest)
    span = f"{low:,}" if low == high else f"{low:,} to {high:,}"
    sets_named = " and ".join(SHORT[ds] for ds in sets)
    if wide > WIDE_PTS or low < FEW_PROMPTS:
        widths = f", 95% intervals up to ±{wide:.0f} points" if wide > WIDE_PTS else ""
        return Worth(f"Small samples: {span} prompts per {sets_named} rate{widths}; small differences "
                     f"between models say little.", True)
    return Worth(f"Each {sets_named} rate is over {span} prompts; the 95% intervals are at most ±{wide:.1f} points.")


def _built_line(report: Report) -> Worth | None:
    if not report.self_built:
        return None
    tested = sorted({m for b in report.self_built for m in b.tested})
    text = (f"{SELF_BUILT_MARK} This run's hard set was built from the refusals of {', '.join(tested)}: their "
            f"{SHORT['hard']} rates on it are high by construction.")
    if any(is_result_label(m) for m in report.summary["model"]):
        text += " Compare the “(published sets)” rows (ringed) with the paper."
    return Worth(text, True)


def worth(report: Report, rows: list[tuple[HeadRow, float]]) -> list[Worth]:
    """What the headline rates are worth, one plain line per point, most serious first."""
    out: list[Worth] = []
    if report.choice.note():
        out.append(Worth(report.choice.note(), True))
    judges = list(report.judges.values())
    out += [_judge_line(report, a, len(judges) == 1) for a in judges]
    if not judges and not report.summary.empty:
        out.append(Worth("No judge: these are stage 4's keyword rules, unchecked by an LLM judge (stage 5)."))
    unreliable = sum(a.cause == "keyword_unreliable" for a in report.advice)
    if unreliable:
        out.append(Worth("The judged samples show the keyword rules off for some models: the corrected rates "
                         "are shown (see the warnings).", True))
    out += [w for w in (_built_line(report), _size_line(report, rows)) if w is not None]
    unfinished = sum(f.complete is False for f in report.files)
    if unfinished:
        out.append(Worth(f"{unfinished} result file(s) come from unfinished runs: these numbers may change.", True))
    return out
