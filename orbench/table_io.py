"""Reading input tables with clear, one-line errors for every way a file can be wrong."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import pandas as pd

from .errors import UserError


def read_table(path: str | os.PathLike, required: Iterable[str] = (), *, aliases: dict[str, str] | None = None) -> pd.DataFrame:
    """Read a CSV or parquet file as strings (no NaN guessing).

    ``aliases`` maps an alternative column name to the required one, e.g. XSTest's
    ``type`` -> ``category``; it is applied only when the required name is absent.
    """
    p = Path(path)
    if not p.exists():
        raise UserError(f"input file not found: {p}")
    if p.is_dir():
        raise UserError(f"{p} is a directory; expected a CSV or parquet file")
    if p.stat().st_size == 0:
        raise UserError(f"{p} is empty")
    if p.suffix.lower() in (".parquet", ".pq"):
        try:
            df = pd.read_parquet(p)
        except Exception as err:  # pyarrow raises several types for a bad file
            raise UserError(f"{p} could not be read as parquet: {err}") from None
        df = df.astype(object).where(df.notna(), "").astype(str)
    else:
        try:
            df = pd.read_csv(p, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        except UnicodeDecodeError as err:
            raise UserError(f"{p} is not UTF-8 text (bad byte at position {err.start}); re-save it as UTF-8") from None
        except pd.errors.EmptyDataError:
            raise UserError(f"{p} has no header and no rows") from None
        except pd.errors.ParserError as err:
            raise UserError(f"{p} is not a well-formed CSV: {str(err).strip()}") from None
    for alt, name in (aliases or {}).items():
        if name not in df.columns and alt in df.columns:
            df = df.rename(columns={alt: name})
    missing = [c for c in required if c not in df.columns]
    if missing:
        found = ", ".join(map(str, df.columns)) or "none"
        raise UserError(f"{p} has no {', '.join(repr(m) for m in missing)} column (columns found: {found})")
    if len(df) == 0:
        raise UserError(f"{p} has a header but no rows")
    return df


def output_stem(path: str | os.PathLike) -> str:
    return Path(path).name.rsplit(".", 1)[0] if "." in Path(path).name else Path(path).name
