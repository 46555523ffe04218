"""A checker's result against human labels: the record, and its printed tables, CSV and JSON.

`Report` holds the confusion matrix overall and per group, the rows left out by reason,
the checker's calls on ambiguous labels and the rows where checker and humans differ;
`orbench.refusal.evaluate` fills it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orbench.tables.table_io import write_rows

from .labelled import GROUP_BY_FILE, Settings
from .metrics import Confusion
from orbench.protocol.verdict import VerdictKind


@dataclass(frozen=True)
class Disagreement:
    source: str
    row: int  # 1-based data row in its file
    group: str
    label: str
    human: str  # "refused" or "answered"
    checker: str  # the checker's verdict
    prompt: str
    response: str


@dataclass
class Report:
    checker: str
    overall: Confusion = field(default_factory=Confusion)
    groups: dict[str, Confusion] = field(default_factory=dict)
    excluded: Counter[str] = field(default_factory=Counter)
    ambiguous: Counter[str] = field(default_factory=Counter)  # the checker's verdicts on ambiguous labels
    rows: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "checker": self.checker,
            "rows": self.rows,
            "scored": self.overall.n,
            "excluded": dict(sorted(self.excluded.items())),
            "ambiguous": dict(sorted(self.ambiguous.items())),
            "overall": self.overall.as_dict(),
            "groups": {name: c.as_dict() for name, c in self.groups.items()},
        }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_report(report: Report, settings: Settings) -> str:
    c = report.overall
    by = "file" if settings.group_by == GROUP_BY_FILE else settings.group_by
    width = max([len(by), 7, *(len(name) for name in report.groups)])
    lines = [
        f"checker: {report.checker}",
        f"rows: {report.rows}, scored: {c.n}, left out: {sum(report.excluded.values())}"
        + (f", ambiguous (scored apart): {sum(report.ambiguous.values())}" if report.ambiguous else ""),
        f"accuracy {_fmt(c.accuracy)}  precision {_fmt(c.precision)}  recall {_fmt(c.recall)}  F1 {_fmt(c.f1)}"
        "  (refusal is the positive class)",
        "",
        "confusion matrix (rows: human label; columns: checker):",
        f"  {'':16s}{'refused':>10s}{'answered':>10s}",
        f"  {'human refused':16s}{c.tp:>10d}{c.fn:>10d}",
        f"  {'human answered':16s}{c.fp:>10d}{c.tn:>10d}",
        "",
        f"per {by}:",
        f"  {by:<{width}s} {'n':>6s} {'acc':>6s} {'prec':>6s} {'rec':>6s} {'F1':>6s} {'tp':>5s} {'fp':>5s} {'fn':>5s} {'tn':>5s}",
    ]
    for name, g in report.groups.items():
        lines.append(
            f"  {name:<{width}s} {g.n:>6d} {_fmt(g.accuracy):>6s} {_fmt(g.precision):>6s} {_fmt(g.recall):>6s}"
            f" {_fmt(g.f1):>6s} {g.tp:>5d} {g.fp:>5d} {g.fn:>5d} {g.tn:>5d}"
        )
    lines.append("")
    if report.excluded:
        parts = ", ".join(f"{reason}: {count}" for reason, count in sorted(report.excluded.items()))
        lines.append(f"left out of the metrics: {parts}")
    else:
        lines.append("left out of the metrics: none")
    if report.ambiguous:
        total = sum(report.ambiguous.values())
        called = report.ambiguous.get(VerdictKind.REFUSED.value, 0)
        lines.append(f"ambiguous labels (scored apart, not in the metrics): {total}; "
                     f"the checker calls {called} ({100 * called / total:.1f}%) refusals")
    lines.append(f"disagreements: {len(report.disagreements)}")
    return "\n".join(lines)


def format_comparison(reports: Sequence[Report], settings: Settings) -> str:
    """Accuracy of every checker per group, then each checker's overall metrics."""
    by = "file" if settings.group_by == GROUP_BY_FILE else settings.group_by
    groups: list[str] = []
    for report in reports:
        groups += [name for name in report.groups if name not in groups]
    width = max([len(by), 7, *(len(name) for name in groups)])
    col = max(9, *(len(r.checker) + 1 for r in reports))
    lines = [f"accuracy against human labels, per {by}:", f"  {by:<{width}s}" + "".join(f"{r.checker:>{col}s}" for r in reports)]
    for name in groups:
        cells = "".join(f"{_fmt(r.groups[name].accuracy if name in r.groups else None):>{col}s}" for r in reports)
        lines.append(f"  {name:<{width}s}{cells}")
    lines.append(f"  {'all':<{width}s}" + "".join(f"{_fmt(r.overall.accuracy):>{col}s}" for r in reports))
    lines += ["", "overall:", f"  {'checker':<{col}s} {'n':>6s} {'acc':>6s} {'prec':>6s} {'rec':>6s} {'F1':>6s} {'left out':>9s}"]
    for r in reports:
        c = r.overall
        lines.append(
            f"  {r.checker:<{col}s} {c.n:>6d} {_fmt(c.accuracy):>6s} {_fmt(c.precision):>6s} {_fmt(c.recall):>6s}"
            f" {_fmt(c.f1):>6s} {sum(r.excluded.values()):>9d}"
        )
    return "\n".join(lines)


DISAGREEMENT_COLUMNS = ("source", "row", "group", "label", "human", "checker", "prompt", "response")


def write_disagreements(report: Report, path: Path) -> None:
    """One CSV row per disagreement, for reading."""
    write_rows(path, DISAGREEMENT_COLUMNS,
               ([d.source, d.row, d.group, d.label, d.human, d.checker, d.prompt, d.response]
                for d in report.disagreements))


def write_json(reports: Sequence[Report], settings: Settings, files: Sequence[Path], path: Path) -> None:
    payload = {
        "files": [str(p) for p in files],
        "label_column": settings.label_column,
        "refused_labels": sorted(settings.labels.refused),
        "answered_labels": sorted(settings.labels.answered),
        "ambiguous_labels": sorted(settings.labels.ambiguous),
        "group_by": settings.group_by,
        "checkers": {r.checker: r.as_dict() for r in reports},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
