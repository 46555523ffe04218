"""Labels read anew, laid over a source's published labels (the source's file is not changed).

A source in `pool.toml` may name a relabel file:

    relabels = { file = "relabels/relabels.csv", keys = { question_id = "question_id", model = "model" } }

The file (a path relative to the configuration file) has one row per relabelled response:
a `source` column (only rows naming this source apply), the key columns, `label` (refusal,
answer or ambiguous: the class itself, not a label to map) and `response_sha256` (the first
16 hex digits of the SHA-256 of the response's UTF-8 text). `keys` maps each key column of
the relabel file to a column of the source's file, or to `#row`, the 0-based data row of the
file (for a source without an id column).

Every relabel must find exactly one row whose response has that hash: a relabel that matches
no row, two rows, or a row whose text has changed is an error, never skipped, so the labels
can never drift onto other responses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orbench.errors import UserError
from orbench.tables.table_io import read_table

ROW_KEY = "#row"  # the 0-based data row of the source's file
SOURCE_COLUMN = "source"
LABEL_COLUMN = "label"
HASH_COLUMN = "response_sha256"
HASH_DIGITS = 16


@dataclass(frozen=True)
class Relabels:
    """What a source's `relabels` entry says: the file, and its key columns -> the source's."""

    file: Path
    keys: dict[str, str]

    @classmethod
    def from_entry(cls, entry: object, source: str, config: Path) -> Relabels:
        try:
            file, keys = entry["file"], entry["keys"]  # type: ignore[index]
            keys = {str(k): str(v) for k, v in keys.items()}
        except (KeyError, TypeError, AttributeError):
            raise UserError(f"pool configuration {config}: source {source!r}: relabels needs file and keys "
                            '(e.g. relabels = { file = "x.csv", keys = { id = "id" } })') from None
        if not keys:
            raise UserError(f"pool configuration {config}: source {source!r}: relabels names no key column")
        return cls((config.parent / str(file)).resolve(), keys)


def response_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_DIGITS]


def load(relabels: Relabels, source: str, classes: Sequence[str]) -> dict[tuple[str, ...], tuple[str, str]]:
    """The relabels of one source: key values (in `relabels.keys` order) -> (class, response hash)."""
    path = relabels.file
    if not path.is_file():
        raise UserError(f"pool source {source}: relabel file not found: {path}")
    frame = read_table(path, [SOURCE_COLUMN, LABEL_COLUMN, HASH_COLUMN, *relabels.keys])
    frame = frame[frame[SOURCE_COLUMN].str.strip() == source]
    if frame.empty:
        raise UserError(f"pool source {source}: {path.name} has no row whose source is {source!r}")
    out: dict[tuple[str, ...], tuple[str, str]] = {}
    for number, record in enumerate(frame.to_dict("records"), start=1):
        key = tuple(record[k].strip() for k in relabels.keys)
        label = record[LABEL_COLUMN].strip().lower()
        if label not in classes:
            raise UserError(f"pool source {source}: {path.name} relabels {key} as {label!r}; use {', '.join(classes)}")
        if key in out:
            raise UserError(f"pool source {source}: {path.name} relabels {key} twice")
        out[key] = (label, record[HASH_COLUMN].strip().lower())
    return out


def apply(golds: list[str | None], responses: Sequence[str], columns: Mapping[str, Sequence[str]],
          relabels: Relabels, table: dict[tuple[str, ...], tuple[str, str]], found: set, source: str,
          file: str) -> None:
    """Set `golds[i]` from the relabels of the rows of one file, adding their keys to `found`.
    Fails when a relabel's key finds two rows, or its row's response has another hash."""
    keyed: dict[tuple[str, ...], int] = {}
    for i in range(len(responses)):
        key = tuple(str(i) if col == ROW_KEY else columns[col][i].strip() for col in relabels.keys.values())
        if key in table:
            if key in keyed or key in found:
                raise UserError(f"pool source {source}: relabel key {key} matches more than one row ({file})")
            keyed[key] = i
    for key, i in keyed.items():
        label, expected = table[key]
        if response_hash(responses[i]) != expected:
            raise UserError(f"pool source {source}: the response relabelled as {key} in {relabels.file.name} is not "
                            f"the one in {file} (its SHA-256 differs): the relabels do not fit this file")
        golds[i] = label
    found.update(keyed)


def check_all_found(table: Mapping[tuple[str, ...], object], found: set, relabels: Relabels, source: str) -> None:
    missing = [key for key in table if key not in found]
    if missing:
        raise UserError(f"pool source {source}: {len(missing)} of the {len(table)} relabels in {relabels.file.name} "
                        f"match no row of the source's files (the first: {missing[0]})")
