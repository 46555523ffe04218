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

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from orbench.protocol.constants import (
    COL_PROMPT,
    DIRECT_ANSWER,
    REFUSAL_CLASSES,
    UNSCORED,
)
from orbench.refusal import FAMILIES, Verdict, VerdictKind, classify
from orbench.refusal.metrics import Confusion

# The records, the input and the output live in their own modules; their names are
# importable from here as before (orbench.evaluate_refusal re-exports this module).
from .evaluation import (  # noqa: F401
    DISAGREEMENT_COLUMNS,
    Disagreement,
    Report,
    format_comparison,
    format_report,
    write_disagreements,
    write_json,
)
from .labelled import (  # noqa: F401
    DEFAULT_AMBIGUOUS_LABELS,
    DEFAULT_ANSWERED_LABELS,
    DEFAULT_LABEL_COLUMN,
    DEFAULT_REFUSED_LABELS,
    DEFAULT_RESPONSE_COLUMNS,
    GROUP_BY_FILE,
    TABLE_SUFFIXES,
    EvaluationError,
    LabelMap,
    Settings,
    Table,
    expand_inputs,
    load_table,
    need_column,
    response_column_for,
)

FINISH_REASON_COLUMN = "finish_reason"  # used when present
COLUMN_CHECKER_PREFIX = "column:"

# Values a verdict column may hold, compared without case: stage 5 classes,
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
        # the scored detector also reads the prompt, as stage 4 does, when the file has it
        verdict = classify(row[response_column], spec, row.get(FINISH_REASON_COLUMN) or None, row.get(COL_PROMPT) or None)
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


def check_columns(tables: Sequence[Table], settings: Settings, checkers: Sequence[str]) -> None:
    """Fail early, before scoring, if any file lacks a column that is needed."""
    for table in tables:
        need_column(table, settings.label_column, "--label_column")
        if settings.group_by != GROUP_BY_FILE:
            need_column(table, settings.group_by, "--group_by")
        for spec in checkers:
            column = required_column(spec)
            if column is not None:
                need_column(table, column, f"--checker {spec}")
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
