"""Reading input tables with clear, one-line errors for every way a file can be wrong.

The format follows the extension: ``.parquet``/``.pq``, ``.jsonl`` (one JSON object per line),
``.json`` (a list of JSON objects), ``.tsv``, and CSV for anything else. An input may also be
a published set's short name (``or-bench-hard-1k`` and ``or-bench-toxic`` read the copies
bundled with the package, see orbench.tables.published; ``or-bench-80k`` the Hub) or a file on the
Hugging Face Hub (``hf://datasets/...``, see orbench.tables.hub).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from . import hub, published
from ..errors import UserError

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is read: a stage's --help should not pay for it

# DataFrame.attrs key under which read_table leaves which published copy it read: the bundled
# file or the Hub file, with its SHA-256 (None for any other local file).
SOURCE_ATTR = "input_source"


def read_table(path: str | os.PathLike, required: Iterable[str] = (), *, aliases: dict[str, str] | None = None) -> pd.DataFrame:
    """Read a table (see the module docstring for the formats) as strings (no NaN guessing).

    ``aliases`` maps an alternative column name to the required one, e.g. XSTest's
    ``type`` -> ``category``; it is applied only when the required name is absent.
    A Hub input is downloaded (or found in the Hub cache) first; ``df.attrs[SOURCE_ATTR]``
    then says which repo, file and commit were read. A bundled set's short name reads the
    package's copy, and ``df.attrs[SOURCE_ATTR]`` says so.
    """
    ref = hub.hub_file(path)
    short = published.bundled_name(path) if ref is None else None
    source = None
    if ref is not None:
        fetched = hub.fetch(ref)
        p, label, source = fetched.path, ref.uri, fetched.source
    elif short is not None:
        p, source = published.open_bundled(short)
        label = f"{short} (the copy bundled with orbench, {p})"
    else:
        p = Path(path)
        label = str(p)
        if not p.exists():
            raise UserError(f"input file not found: {p}")
        if p.is_dir():
            raise UserError(f"{p} is a directory; expected a CSV, TSV, JSON, JSONL or parquet file")
    if p.stat().st_size == 0:
        raise UserError(f"{label} is empty")
    df = _read_any(p, label)
    for alt, name in (aliases or {}).items():
        if name not in df.columns and alt in df.columns:
            df = df.rename(columns={alt: name})
    missing = [c for c in required if c not in df.columns]
    if missing:
        found = ", ".join(map(str, df.columns)) or "none"
        raise UserError(f"{label} has no {', '.join(repr(m) for m in missing)} column (columns found: {found})")
    if len(df) == 0:
        raise UserError(f"{label} has a header but no rows")
    df.attrs[SOURCE_ATTR] = source
    return df


def _read_any(p: Path, label: str) -> pd.DataFrame:
    import pandas as pd

    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        try:
            df = pd.read_parquet(p)
        except Exception as err:  # pyarrow raises several types for a bad file
            raise UserError(f"{label} could not be read as parquet: {err}") from None
        return df.astype(object).where(df.notna(), "").astype(str)
    if suffix in (".jsonl", ".json"):
        return _records_frame(_read_jsonl(p, label) if suffix == ".jsonl" else _read_json(p, label))
    sep, kind = ("\t", "TSV") if suffix == ".tsv" else (",", "CSV")
    try:
        return pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise _not_utf8(label, err) from None
    except pd.errors.EmptyDataError:
        raise UserError(f"{label} has no header and no rows") from None
    except pd.errors.ParserError as err:
        raise UserError(f"{label} is not a well-formed {kind}: {str(err).strip()}") from None


def _not_utf8(label: str, err: UnicodeDecodeError) -> UserError:
    return UserError(f"{label} is not UTF-8 text (bad byte at position {err.start}); re-save it as UTF-8")


def _text(p: Path, label: str) -> str:
    try:
        return p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _not_utf8(label, err) from None


def _read_jsonl(p: Path, label: str) -> list[dict[str, Any]]:
    records = []
    # split on "\n" only: str.splitlines would also cut at U+2028, which JSON strings may hold raw
    for n, line in enumerate(_text(p, label).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{label} line {n} is not valid JSON: {err.msg} (column {err.colno})") from None
        if not isinstance(value, dict):
            raise UserError(f"{label} line {n} is a JSON {_kind(value)}, not an object (one record per line)")
        records.append(value)
    if not records:
        raise UserError(f"{label} holds no JSON records")
    return records


def _read_json(p: Path, label: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(_text(p, label))
    except json.JSONDecodeError as err:
        raise UserError(f"{label} is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
    if not isinstance(value, list):
        raise UserError(f"{label} is a JSON {_kind(value)}; expected a list of records like [{{\"prompt\": ...}}, ...]")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise UserError(f"{label} item {i} is a JSON {_kind(item)}; expected a list of records (objects)")
    if not value:
        raise UserError(f"{label} is an empty list: no rows")
    return value


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _cell(value: Any) -> str:
    """A JSON value as the string a CSV cell would hold: null is empty, nested values stay JSON."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    columns = list(dict.fromkeys(k for r in records for k in r))  # first-seen order
    return pd.DataFrame([[_cell(r.get(c)) for c in columns] for r in records], columns=columns, dtype=object)


def output_stem(path: str | os.PathLike) -> str:
    """An input's name without its extension, for output names; a Hub input is named after its file."""
    name = hub.input_name(path)
    return name.rsplit(".", 1)[0] if "." in name else name


def write_rows(path: str | os.PathLike, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Write rows under a header as a UTF-8 CSV file, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
