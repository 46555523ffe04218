"""A stage's input rows: read the table (a file or the Hub), give it a category, drop empty
texts, take the --limit sample, and turn rows into jobs keyed by their content."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..protocol.constants import COL_CATEGORY
from ..errors import UserError, warn
from ..engine.jobs import Job
from .resume import content_hash, keys_with_occurrence
from .sampling import stratified
from .table_io import SOURCE_ATTR, read_table

if TYPE_CHECKING:
    import pandas as pd

# A prompt longer than this is not sent: it is recorded in the failed file with the reason.
# 100,000 characters is about 25,000 tokens, past the context of most models we target;
# sending it would only buy a 400 error (or a bill). Override with --max_prompt_chars.
MAX_PROMPT_CHARS = 100_000


@dataclass
class PreparedRows:
    rows: list[dict[str, str]]
    skipped_blank: int = 0
    source: dict[str, Any] | None = None  # a Hub input: the repo, file and commit read (for .run.json)


def prepare_rows(df: pd.DataFrame, text_column: str, limit: int | None, seed: int = 0) -> PreparedRows:
    """Drop rows whose text is empty (counted, with a warning); with ``limit``, keep a seeded
    sample of that many rows spread over the categories (orbench.tables.sampling.stratified), in
    input order."""
    records = df.to_dict("records")
    rows = [r for r in records if str(r.get(text_column, "")).strip() and str(r.get(text_column)).lower() != "nan"]
    skipped = len(records) - len(rows)
    if skipped:
        warn(f"skipped {skipped} row(s) with an empty {text_column!r}")
    if limit is not None and limit < len(rows):
        ids = keys_with_occurrence(content_hash([str(r.get(text_column, "")), str(r.get(COL_CATEGORY, ""))])
                                   for r in rows)
        rows = [rows[i] for i in stratified(ids, [str(r.get(COL_CATEGORY, "")) for r in rows], limit, seed)]
    return PreparedRows(rows=rows, skipped_blank=skipped)


def load_rows(path: str, required: Sequence[str], text_column: str, limit: int | None,
              aliases: dict[str, str] | None = None, seed: int = 0) -> PreparedRows:
    """Read a stage's input, give it a category column if it has none, drop the rows with an
    empty ``text_column`` and, with ``limit``, keep a stratified sample of that many (seeded
    by ``seed``). No usable row: a UserError."""
    df = read_table(path, required, aliases=aliases)
    if COL_CATEGORY not in df.columns:
        df[COL_CATEGORY] = ""
    prepared = prepare_rows(df, text_column, limit, seed)
    prepared.source = df.attrs.get(SOURCE_ATTR)
    if not prepared.rows:
        raise UserError(f"{path} has no non-empty {text_column!r} values")
    return prepared


def key_function(key_columns: Sequence[str]) -> Callable[[dict[str, str]], str]:
    """A row's content hash over the key columns (without its occurrence number)."""
    return lambda row: content_hash([str(row.get(c, "")) for c in key_columns])


def jobs_from_rows(rows: Sequence[dict[str, str]], key_columns: Sequence[str]) -> list[Job]:
    """One job per row, keyed by the content of its key columns (repeats numbered)."""
    key_of = key_function(key_columns)
    return [Job(key=k, index=i, row=r)
            for i, (k, r) in enumerate(zip(keys_with_occurrence(key_of(r) for r in rows), rows))]


def too_long(text: str, limit: int) -> str | None:
    if len(text) > limit:
        return f"prompt not sent: {len(text)} characters is over the limit of {limit} (--max_prompt_chars)"
    return None
