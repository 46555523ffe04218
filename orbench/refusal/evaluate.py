"""Score a refusal checker against human labels (the library behind the command in `command`).

    python -m orbench.evaluate_refusal --checker generic ../shared/data/xstest/model_completions

In: one or more CSV (or parquet) files, or folders of them, with a response
column and a human label column. XSTest's completion files work as they are: response
`completion`, label `final_label`, refusal = `2_full_refusal`, answer =
`1_full_compliance`; `3_partial_refusal` maps onto neither and is scored apart
(`--ambiguous_labels`).

Checkers:
  * a family rule set of stage 4 (`gpt-3.5`, `gpt-4`, `claude`, `gemini`,
    `mistral`, `llama`, `qwen`), our `generic` rules, or the `scored` detector;
  * `column:NAME`, the verdicts already in a column, such as stage 5's
    `answer_category` (direct_refusal / indirect_refusal count as refusals,
    direct_answer as an answer) or stage 4's `is_rejected`.

Out: accuracy, precision, recall and F1 (refusal is the positive class), the
confusion matrix, the same per file or per `--group_by` column, and the rows
left out of the metrics, counted by reason: empty or content-filtered responses,
`unscored` judge verdicts, rows whose label is in neither label list.
`--disagreements PATH` writes the rows where checker and humans differ;
`--json PATH` writes the metrics; `--all_checkers` compares every checker.

A user mistake (a missing file or column, an empty or undecodable CSV, an
unknown checker) is reported in one line on stderr, with exit code 2.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from orbench.constants import (
    COL_ANSWER_CATEGORY,
    COL_PROMPT,
    COL_RESPONSE,
    DIRECT_ANSWER,
    REFUSAL_CLASSES,
    UNSCORED,
)
from orbench.errors import UserError
from orbench.refusal import DEFAULT_RULES, FAMILIES, Verdict, VerdictKind, classify
from orbench.refusal.metrics import Confusion
from orbench.table_io import read_table

DEFAULT_RESPONSE_COLUMNS = ("completion", COL_RESPONSE)  # the first one present is used
DEFAULT_LABEL_COLUMN = "final_label"
DEFAULT_REFUSED_LABELS = ("2_full_refusal",)
# XSTest's partial refusal (refuses, then complies in part) maps onto neither of
# OR-Bench's classes: such rows are scored apart, never forced into one.
DEFAULT_AMBIGUOUS_LABELS = ("3_partial_refusal",)
DEFAULT_ANSWERED_LABELS = ("1_full_compliance",)
FINISH_REASON_COLUMN = "finish_reason"  # used when present
GROUP_BY_FILE = "file"
COLUMN_CHECKER_PREFIX = "column:"
TABLE_SUFFIXES = (".csv", ".parquet")

# Values a verdict column may hold, compared without case: stage 5 classes, this module's
# own verdict names, and whatever stage 4's `is_rejected` reader takes (`Verdict.from_csv`).
COLUMN_VERDICTS: dict[str, VerdictKind] = {
    **dict.fromkeys(REFUSAL_CLASSES, VerdictKind.REFUSED), DIRECT_ANSWER: VerdictKind.ANSWERED,
    VerdictKind.REFUSED.value: VerdictKind.REFUSED, VerdictKind.ANSWERED.value: VerdictKind.ANSWERED,
}
# Besides stage 4's empty and filtered, verdicts that score nothing; they are counted apart.
VERDICT_EXCLUDED_VALUES: frozenset[str] = frozenset({UNSCORED, ""})

# Reasons a row is left out of the metrics.
EXCLUDED_UNLABELLED = "unlabelled"  # its label is in neither label list


class EvaluationError(UserError):
    """A mistake in the user's input; reported in one line, exit code 2."""


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelMap:
    """Which human labels mean a refusal, which an answer, and which neither
    cleanly (scored apart)."""

    refused: frozenset[str]
    answered: frozenset[str]
    ambiguous: frozenset[str] = frozenset()

    @classmethod
    def of(cls, refused: Iterable[str], answered: Iterable[str], ambiguous: Iterable[str] = ()) -> LabelMap:
        refused_set = frozenset(v.strip().lower() for v in refused if v.strip())
        answered_set = frozenset(v.strip().lower() for v in answered if v.strip())
        ambiguous_set = frozenset(v.strip().lower() for v in ambiguous if v.strip())
        if not refused_set or not answered_set:
            raise EvaluationError("--refused_labels and --answered_labels must each name at least one label")
        both = (refused_set & answered_set) | (ambiguous_set & (refused_set | answered_set))
        if both:
            raise EvaluationError(f"label(s) in more than one of --refused_labels, --answered_labels and "
                                  f"--ambiguous_labels: {', '.join(sorted(both))}")
        return cls(refused_set, answered_set, ambiguous_set)

    def is_ambiguous(self, label: str) -> bool:
        return label.strip().lower() in self.ambiguous

    def gold(self, label: str) -> bool | None:
        """True for a refusal, False for an answer, None if the label is in neither list."""
        key = label.strip().lower()
        if key in self.refused:
            return True
        if key in self.answered:
            return False
        return None


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


@dataclass(frozen=True)
class Table:
    """One input file, read as strings."""

    path: Path
    frame: pd.DataFrame

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass(frozen=True)
class Settings:
    response_column: str | None  # None: the first of DEFAULT_RESPONSE_COLUMNS present
    label_column: str
    labels: LabelMap
    group_by: str  # GROUP_BY_FILE or a column name


# --------------------------------------------------------------------------
# Checkers
# --------------------------------------------------------------------------

# A checker reads one row (a dict of strings) and gives a verdict string:
# "refused", "answered", or a reason to leave the row out.
RowChecker = Callable[[dict[str, str], "str | None"], str]


def checker_names(extra: Iterable[str] = ()) -> list[str]:
    """Every family rule set and `generic`, then any other checker asked for."""
    names = list(FAMILIES)
    names += [name for name in extra if name not in names]
    return names


def make_checker(spec: str) -> RowChecker:
    """A row checker from a name: a family, `generic`, or `column:NAME`."""
    if spec.startswith(COLUMN_CHECKER_PREFIX):
        column = spec[len(COLUMN_CHECKER_PREFIX) :]
        if not column:
            raise EvaluationError("checker 'column:' needs a column name, e.g. column:answer_category")
        return _column_checker(column)
    if spec not in FAMILIES:
        raise EvaluationError(
            f"unknown checker {spec!r}; use one of {', '.join(FAMILIES)}, or column:NAME for a verdict column"
        )

    def check(row: dict[str, str], response_column: str | None) -> str:
        assert response_column is not None  # evaluate() resolves it for family checkers
        verdict = classify(row[response_column], spec, row.get(FINISH_REASON_COLUMN) or None)
        return verdict.value

    return check


def _column_checker(column: str) -> RowChecker:
    def check(row: dict[str, str], response_column: str | None) -> str:
        value = row[column].strip().lower()
        stage4 = Verdict.from_csv(value)
        kind = COLUMN_VERDICTS.get(value, stage4.kind if stage4 else None)
        if kind is not None:
            return kind.value
        if value in VERDICT_EXCLUDED_VALUES:
            return value or VerdictKind.EMPTY.value
        return f"unrecognised verdict {value!r}"

    return check


def required_column(spec: str) -> str | None:
    """The column a `column:NAME` checker reads, else None."""
    if spec.startswith(COLUMN_CHECKER_PREFIX):
        return spec[len(COLUMN_CHECKER_PREFIX) :]
    return None


# --------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------


def expand_inputs(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, with a folder replaced by the CSV and parquet files directly in it."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in TABLE_SUFFIXES)
            if not found:
                raise EvaluationError(f"no .csv or .parquet files in folder {path}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise EvaluationError(f"no such file or folder: {path}")
    if not files:
        raise EvaluationError("no input files given (or --leave_one_out, to validate on the development pool)")
    return files


def load_table(path: Path) -> Table:
    """Read one input file with every cell as a string (see orbench.table_io)."""
    return Table(path, read_table(path))


def response_column_for(table: Table, requested: str | None) -> str:
    if requested is not None:
        _need_column(table, requested, "--response_column")
        return requested
    for name in DEFAULT_RESPONSE_COLUMNS:
        if name in table.frame.columns:
            return name
    raise EvaluationError(
        f"{table.path} has neither a 'completion' nor a 'response' column; "
        f"name the response column with --response_column (columns: {_columns(table)})"
    )


def _need_column(table: Table, column: str, option: str) -> None:
    if column not in table.frame.columns:
        raise EvaluationError(f"{table.path} has no column {column!r} ({option}); columns: {_columns(table)}")


def _columns(table: Table) -> str:
    return ", ".join(map(str, table.frame.columns))


def check_columns(tables: Sequence[Table], settings: Settings, checkers: Sequence[str]) -> None:
    """Fail early, before scoring, if any file lacks a column that is needed."""
    for table in tables:
        _need_column(table, settings.label_column, "--label_column")
        if settings.group_by != GROUP_BY_FILE:
            _need_column(table, settings.group_by, "--group_by")
        for spec in checkers:
            column = required_column(spec)
            if column is not None:
                _need_column(table, column, f"--checker {spec}")
        if any(required_column(spec) is None for spec in checkers):
            response_column_for(table, settings.response_column)


# --------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------


def evaluate(tables: Sequence[Table], checker: str, settings: Settings) -> Report:
    """Score one checker on every row of `tables`."""
    check = make_checker(checker)
    needs_response = required_column(checker) is None
    report = Report(checker=checker)
    for table in tables:
        if needs_response:
            response_column = response_column_for(table, settings.response_column)
        else:
            response_column = _optional_response_column(table, settings.response_column)
        records = table.frame.to_dict("records")
        for number, row in enumerate(records, start=1):
            report.rows += 1
            gold = settings.labels.gold(row[settings.label_column])
            if gold is None:
                if settings.labels.is_ambiguous(row[settings.label_column]):
                    report.ambiguous[check(row, response_column)] += 1
                else:
                    report.excluded[EXCLUDED_UNLABELLED] += 1
                continue
            verdict = check(row, response_column)
            if verdict not in (VerdictKind.REFUSED.value, VerdictKind.ANSWERED.value):
                report.excluded[verdict] += 1
                continue
            predicted = verdict == VerdictKind.REFUSED.value
            group = table.name if settings.group_by == GROUP_BY_FILE else row[settings.group_by]
            report.overall.add(gold, predicted)
            report.groups.setdefault(group, Confusion()).add(gold, predicted)
            if gold != predicted:
                report.disagreements.append(
                    Disagreement(
                        source=str(table.path),
                        row=number,
                        group=group,
                        label=row[settings.label_column],
                        human=VerdictKind.REFUSED.value if gold else VerdictKind.ANSWERED.value,
                        checker=verdict,
                        prompt=row.get(COL_PROMPT, ""),
                        response=row.get(response_column, "") if response_column else "",
                    )
                )
    if report.overall.n == 0:
        labels = Counter(
            value for table in tables for value in table.frame[settings.label_column].tolist()
        )
        seen = ", ".join(f"{value!r}" for value, _ in labels.most_common(8))
        raise EvaluationError(
            f"no row could be scored: labels in {settings.label_column!r} are {seen}; "
            "map them with --refused_labels and --answered_labels"
            if report.excluded.get(EXCLUDED_UNLABELLED, 0) + sum(report.ambiguous.values()) == report.rows
            else f"no row could be scored by {checker}: excluded {dict(report.excluded)}"
        )
    return report


def _optional_response_column(table: Table, requested: str | None) -> str | None:
    try:
        return response_column_for(table, requested)
    except EvaluationError:
        return None


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


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
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(DISAGREEMENT_COLUMNS)
        for d in report.disagreements:
            writer.writerow([d.source, d.row, d.group, d.label, d.human, d.checker, d.prompt, d.response])


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
