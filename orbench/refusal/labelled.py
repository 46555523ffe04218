"""The human-labelled tables a refusal checker is scored on: reading them, and what their labels mean.

A table is one CSV or parquet file read with every cell as a string; `Settings` says
which column holds the response and which the label, and `LabelMap` which labels mean a
refusal, an answer, or neither cleanly. The defaults fit XSTest's completion files.
Scoring is in `orbench.refusal.evaluate`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orbench.protocol.constants import COL_RESPONSE
from orbench.errors import UserError
from orbench.tables.table_io import read_table

if TYPE_CHECKING:
    import pandas as pd  # only an annotation here; read_table imports it when a file is read

DEFAULT_RESPONSE_COLUMNS = ("completion", COL_RESPONSE)  # the first one present is used
DEFAULT_LABEL_COLUMN = "final_label"
DEFAULT_REFUSED_LABELS = ("2_full_refusal",)
# XSTest's partial refusal (refuses, then complies in part) maps onto neither of
# OR-Bench's classes: such rows are scored apart, never forced into one.
DEFAULT_AMBIGUOUS_LABELS = ("3_partial_refusal",)
DEFAULT_ANSWERED_LABELS = ("1_full_compliance",)
GROUP_BY_FILE = "file"
TABLE_SUFFIXES = (".csv", ".parquet")


class EvaluationError(UserError):
    """A mistake in the user's input; reported in one line, exit code 2."""



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
    """Read one input file with every cell as a string (see orbench.tables.table_io)."""
    return Table(path, read_table(path))


def response_column_for(table: Table, requested: str | None) -> str:
    if requested is not None:
        need_column(table, requested, "--response_column")
        return requested
    for name in DEFAULT_RESPONSE_COLUMNS:
        if name in table.frame.columns:
            return name
    raise EvaluationError(
        f"{table.path} has neither a 'completion' nor a 'response' column; "
        f"name the response column with --response_column (columns: {_columns(table)})"
    )


def need_column(table: Table, column: str, option: str) -> None:
    """Fail, naming the option that asked for it, when the table lacks the column."""
    if column not in table.frame.columns:
        raise EvaluationError(f"{table.path} has no column {column!r} ({option}); columns: {_columns(table)}")


def _columns(table: Table) -> str:
    return ", ".join(map(str, table.frame.columns))
