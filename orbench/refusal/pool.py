"""The development pool: labelled responses from several sources, read through one loader.

What each source's files, columns and labels are is configuration (`pool.toml`
beside this module, or a file of the same shape), not code.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from orbench.errors import UserError
from orbench.tables.table_io import read_table

from . import relabels as relabelling
from .relabels import ROW_KEY, Relabels

REFUSAL = "refusal"
ANSWER = "answer"
AMBIGUOUS = "ambiguous"
CLASSES: tuple[str, ...] = (REFUSAL, ANSWER, AMBIGUOUS)

DEFAULT_CONFIG = Path(__file__).with_name("pool.toml")
POOL_DIR_ENV = "ORBENCH_POOL_DIR"
DEFAULT_POOL_DIR = Path("..") / "shared" / "data"  # beside a clone of the repository
PROMPT_COLUMN = "prompt"  # the default prompt column


@dataclass(frozen=True)
class Source:
    """One labelled source, as `pool.toml` describes it."""

    name: str
    files: str  # glob, relative to the pool folder
    response_column: str
    label_column: str | None  # None: the source publishes no labels; its rows read anew (relabels) are the source
    labels: dict[str, str]  # label as published -> refusal | answer | ambiguous
    part_from_file: str | None = None  # regex with one group over the file stem
    part_from_column: str | None = None  # a column whose value names the row's part (e.g. the model)
    prompt_column: str = PROMPT_COLUMN  # carried along when present, for reading
    relabels: Relabels | None = None  # labels read anew, laid over the published ones (see `relabels`)

    def part_for(self, path: Path) -> str:
        if self.part_from_file is None:
            return self.name
        match = re.fullmatch(self.part_from_file, path.stem)
        if match is None:
            raise UserError(f"pool source {self.name}: file name {path.name} does not match {self.part_from_file!r}")
        return f"{self.name}/{match.group(1)}"


@dataclass(frozen=True)
class PoolRow:
    source: str
    part: str  # what leave-one-out holds out: the source, or one of its files or models
    file: str
    row: int  # 1-based data row in its file
    prompt: str
    response: str
    label: str  # as published
    gold: str  # refusal | answer | ambiguous (the relabel's class, where the row was relabelled)


def load_config(path: Path = DEFAULT_CONFIG) -> list[Source]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"pool configuration not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"pool configuration {path} is not valid TOML: {err}") from None
    sources = []
    for name, entry in raw.items():
        try:
            labels = {str(k).strip().lower(): str(v) for k, v in entry.get("labels", {}).items()}
            if "label" not in entry and "relabels" not in entry:
                raise KeyError("label")
            source = Source(
                name=name,
                files=entry["files"],
                response_column=entry["response"],
                label_column=entry.get("label"),
                labels=labels,
                part_from_file=entry.get("part_from_file"),
                part_from_column=entry.get("part_from_column"),
                prompt_column=entry.get("prompt", PROMPT_COLUMN),
                relabels=Relabels.from_entry(entry["relabels"], name, path) if "relabels" in entry else None,
            )
        except (KeyError, TypeError, AttributeError) as err:
            raise UserError(f"pool configuration {path}: source {name!r} needs files, response, and label and labels "
                            f"(or relabels, for a source that publishes no labels) ({err})") from None
        if source.part_from_file is not None and source.part_from_column is not None:
            raise UserError(f"pool configuration {path}: source {name!r} sets both part_from_file and part_from_column")
        bad = sorted(set(labels.values()) - set(CLASSES))
        if bad:
            raise UserError(f"pool configuration {path}: source {name!r} maps labels to {bad}; use {', '.join(CLASSES)}")
        sources.append(source)
    if not sources:
        raise UserError(f"pool configuration {path} names no source")
    return sources


def pool_dir(given: str | os.PathLike | None = None) -> Path:
    """The pool folder: as given, else $ORBENCH_POOL_DIR, else ../shared/data."""
    folder = Path(given or os.environ.get(POOL_DIR_ENV) or DEFAULT_POOL_DIR)
    if not folder.is_dir():
        raise UserError(f"pool folder not found: {folder} (give it with --pool_dir or ${POOL_DIR_ENV})")
    return folder


def load_source(source: Source, folder: Path) -> list[PoolRow]:
    files = sorted(folder.glob(source.files))
    if not files:
        raise UserError(f"pool source {source.name}: no file matches {folder / source.files}")
    relabels = source.relabels
    table = relabelling.load(relabels, source.name, CLASSES) if relabels else {}
    found: set = set()
    rows: list[PoolRow] = []
    for path in files:
        by_column = source.part_from_column
        keys = [c for c in (relabels.keys.values() if relabels else ()) if c != ROW_KEY]
        label_column = source.label_column
        frame = read_table(path, [source.response_column, *([label_column] if label_column else []),
                                  *([by_column] if by_column else []), *keys])
        part = source.part_for(path)
        parts_of = [f"{source.name}/{v.strip()}" if v.strip() else source.name for v in frame[by_column].tolist()] \
            if by_column else [part] * len(frame)
        prompt = source.prompt_column
        prompts = frame[prompt].tolist() if prompt in frame.columns else [""] * len(frame)
        responses = frame[source.response_column].tolist()
        labels = frame[label_column].tolist() if label_column else [""] * len(frame)
        golds = [source.labels.get(label.strip().lower()) for label in labels]
        unmapped = Counter(label for label, gold in zip(labels, golds) if gold is None) if label_column else None
        if unmapped:
            seen = ", ".join(f"{k!r} ({v})" for k, v in unmapped.most_common(5))
            raise UserError(f"pool source {source.name}: {path.name} has labels not in its label map: {seen}")
        if relabels:
            columns = {c: frame[c].tolist() for c in keys}
            relabelling.apply(golds, responses, columns, relabels, table, found, source.name, path.name)
        rows += [PoolRow(source.name, row_part, str(path), number, prompt, response, label, gold)  # type: ignore[arg-type]
                 for number, (response, label, prompt, row_part, gold)
                 in enumerate(zip(responses, labels, prompts, parts_of, golds), start=1)
                 if gold is not None]  # (a source without labels: only its rows read anew)
    if relabels:
        relabelling.check_all_found(table, found, relabels, source.name)
    return rows


def load_pool(folder: str | os.PathLike | None = None, config: Path = DEFAULT_CONFIG) -> list[PoolRow]:
    """Every row of every source in the configuration, in a fixed order."""
    root = pool_dir(folder)
    rows: list[PoolRow] = []
    for source in load_config(config):
        rows.extend(load_source(source, root))
    return rows


def parts(rows: list[PoolRow]) -> list[str]:
    """The held-out units, in pool order."""
    return list(dict.fromkeys(r.part for r in rows))
