"""Finding the result files among the inputs and telling what each one holds.

What a file is (its stage, kind, model, judge, dataset, the stage-4 file it is a judged sample
of, the sample's design, whether its run finished) comes from its run record first
(`orbench.tables.runinfo.RunRecord`): the file's own `.run.json`, else the record beside it that names
it as its failed output, else (a split or failed file of an older run) the record of the file
its name says it goes with. The file name is read only for what no record says; for a file the
user named whose name says nothing either, its columns.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from orbench.tables import published
from orbench.protocol.constants import COL_ANSWER_CATEGORY, COL_IS_REJECTED
from orbench.report.common import DATASETS, ReportError, ResultFile
from orbench.report.rows import read_csv
from orbench.report.samples import adopt_stage4, sample_design, sample_source
from orbench.tables.runinfo import RunRecord, read_record

_STAGE5_NAME = re.compile(r"^(?P<stem>.+)_response_check_(?P<kind>merged|failed)_(?P<judge>.+)$")
_STAGE4_NAME = re.compile(r"^(?P<model>.+?)_(?P<kind>merged|failed|rejected|accepted)_(?P<input>.+)$")
_DATASET_WORDS = {"hard": ("hard",), "toxic": ("toxic",), "safe": ("80k", "safe")}
_RECORD_SUFFIX = ".run.json"
_RESULT_STAGES = (4, 5)


def infer_dataset(name: str) -> str | None:
    """Dataset named by a file (or input-file) name, or None if none or several match."""
    low = name.lower()
    hits = [ds for ds, words in _DATASET_WORDS.items() if any(w in low for w in words)]
    return hits[0] if len(hits) == 1 else None


@dataclass(frozen=True)
class NameParts:
    """What a result file's name says (or, for a name that says nothing, its stand-ins)."""

    stage: int  # 4 or 5
    kind: str  # merged, failed, rejected or accepted
    token: str  # the model as spelt in the name
    input: str  # the part that names the dataset
    judge: str  # stage 5: the judge as spelt in the name
    stem: str  # stage 5: the stem of the stage-4 file judged; stage 4: the file's stem


def name_parts(filename: str) -> NameParts | None:
    """Split a result file name into its parts; None if it is not a result file's name."""
    base = filename[:-4] if filename.lower().endswith(".csv") else filename
    if "_response_check_unscored_" in base:
        return None  # a copy of the merged file's unscored rows, not a result of its own
    m5 = _STAGE5_NAME.match(base)
    if m5:
        stem = m5["stem"]
        m4 = _STAGE4_NAME.match(stem)
        token, input_part = (m4["model"], m4["input"]) if m4 else (stem, stem)
        return NameParts(5, m5["kind"], token, input_part, m5["judge"], stem)
    m4 = _STAGE4_NAME.match(base)
    if m4 and not m4["model"].endswith("_moderation"):  # a stage-3 file is not a result
        return NameParts(4, m4["kind"], m4["model"], m4["input"], "", base)
    return None


def parse_result_name(filename: str) -> dict | None:
    """name_parts as a dict (stage, kind, token, input, judge, stem); None if not a result file."""
    parts = name_parts(filename)
    return None if parts is None else asdict(parts)


def result_stage(record: RunRecord | None) -> int | None:
    """4 or 5 when a record says it is a stage-4 or stage-5 result; None otherwise."""
    stage = record.stage_number if record is not None else None
    return stage if stage in _RESULT_STAGES else None


class Records:
    """The run records one scan reads, each file once: a file's own, and the ones in its folder
    that name it as an output."""

    def __init__(self) -> None:
        self._read: dict[Path, RunRecord | None] = {}
        self._folders: dict[Path, list[RunRecord]] = {}

    def own(self, path: Path) -> RunRecord | None:
        key = path.resolve()
        if key not in self._read:
            self._read[key] = read_record(path)
        return self._read[key]

    def in_folder(self, folder: Path) -> list[RunRecord]:
        key = folder.resolve()
        if key not in self._folders:
            found = (self.own(p.with_name(p.name[: -len(_RECORD_SUFFIX)] + ".csv"))
                     for p in sorted(folder.glob("*" + _RECORD_SUFFIX)))
            self._folders[key] = [r for r in found if result_stage(r)]
        return self._folders[key]

    def naming(self, path: Path) -> tuple[RunRecord, str] | None:
        """The stage-4 or stage-5 record beside path that names it as its merged or failed
        output, and which of the two."""
        for record in self.in_folder(path.parent):
            kind = record.kind_of(path)
            if kind in ("merged", "failed"):
                return record, kind
        return None


@dataclass(frozen=True)
class Seen:
    """One input file: what its record and its name say."""

    path: Path
    parts: NameParts  # stage and kind here are the record's when it says them
    record: RunRecord | None  # the record that describes it (own, naming it, or by name)
    own: RunRecord | None  # its own .run.json


def _is_result(path: Path, records: Records) -> bool:
    """Whether a CSV found in a folder is a result file: its record (or one naming it as its
    merged or failed output) says so, or, without one, its name does."""
    own = records.own(path)
    if own is not None and own.stage is not None:
        return result_stage(own) is not None
    return records.naming(path) is not None or name_parts(path.name) is not None


def _expand(inputs: Iterable[str | Path], records: Records) -> list[Path]:
    """Files to read: named files as given, result files found in named folders."""
    out: list[Path] = []
    seen: set[Path] = set()
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = [p for p in sorted(path.rglob("*.csv")) if _is_result(p, records)]
            if not found:
                raise ReportError(f"{path}: no result files in this folder "
                                  "(expected names like MODEL_merged_INPUT.csv)")
        elif path.is_file():
            found = [path]
        else:
            raise ReportError(f"{path}: no such file or folder")
        for p in found:
            key = p.resolve()
            if key not in seen:
                seen.add(key)
                out.append(p)
    return out


def _override_for(path: Path, overrides: Mapping[str, str]) -> str | None:
    resolved = path.resolve()
    for key, dataset in overrides.items():
        kpath = Path(key)
        if kpath.exists():
            kres = kpath.resolve()
            if kres == resolved or (kpath.is_dir() and kres in resolved.parents):
                return dataset
        elif key == path.name or fnmatch.fnmatch(path.name, key):
            return dataset
    return None


def _sniff_columns(path: Path) -> list[str]:
    return list(read_csv(path, nrows=0).columns)


def _by_name(path: Path, parts: NameParts, records: Records) -> RunRecord | None:
    """For a file without a record of its own that names no record: the record of the file
    its name says it goes with (a failed or split file: the merged one, else a sibling)."""
    if parts.stage == 5:
        return records.own(path.with_name(f"{parts.stem}_response_check_merged_{parts.judge}.csv"))
    for kind in ("merged", "rejected", "accepted", "failed"):
        sib = records.own(path.with_name(f"{parts.token}_{kind}_{parts.input}.csv"))
        if sib is not None:
            return sib
    return None


def _from_columns(path: Path, own: RunRecord | None) -> NameParts:
    """What a file whose name says nothing holds, from its columns."""
    cols = _sniff_columns(path)
    if COL_ANSWER_CATEGORY in cols:
        return NameParts(5, "merged", path.stem, path.stem, (own.check_model if own else None) or "judge", path.stem)
    if COL_IS_REJECTED in cols:
        return NameParts(4, "merged", path.stem, path.stem, "", path.stem)
    raise ReportError(
        f"{path}: not a result file (no {COL_IS_REJECTED!r} or "
        f"{COL_ANSWER_CATEGORY!r} column, and the name does not say)")


def _describe(path: Path, records: Records) -> Seen:
    """A file's record (its own, else one naming it) says its stage and kind; where no record
    does, its name; where neither does, its columns. The judge is the record's, else the name's."""
    own = records.own(path)
    named = records.naming(path) if own is None else None
    record = own if own is not None else (named[0] if named else None)
    parts = name_parts(path.name)
    stage = result_stage(record)
    if stage is None and parts is None:
        return Seen(path, _from_columns(path, own), own, own)
    if stage is None:
        assert parts is not None
        record = record or _by_name(path, parts, records)
        stage, kind = parts.stage, parts.kind
    else:
        kind = named[1] if named else record.kind_of(path)  # type: ignore[union-attr]
    base = parts or NameParts(stage, "merged", path.stem, path.stem, "", path.stem)
    judge = ((record.check_model if record else None) or base.judge or "judge") if stage == 5 else ""
    return Seen(path, replace(base, stage=stage, kind=kind or base.kind, judge=judge), record, own)


def _upstream(seen: Seen, records: Records) -> RunRecord | None:
    """A stage-5 file's stage-4 record: the file its record says it read (input_path), else the
    stage-4 file of its name's stem beside it."""
    record = seen.record
    upstream = records.own(Path(record.input_path)) if record is not None and record.input_path else None
    return upstream or records.own(seen.path.with_name(seen.parts.stem + ".csv"))


def _read_published(seen: Seen, upstream: RunRecord | None) -> bool:
    """Whether a result read a published OR-Bench set, from its record's input_source (never
    from a file name); a stage-5 file asks the stage-4 file it judged."""
    if published.is_published(seen.record.input_source if seen.record else None):
        return True
    return seen.parts.stage == 5 and published.is_published(upstream.input_source if upstream else None)


def _labels(files: Sequence[Seen], records: Records) -> dict[Path, tuple[str, str | None]]:
    """path -> (model, dataset its records say or None), per file.

    The model: the record's (stage 4: `model`; stage 5: `target_model`, else its stage-4
    file's), else the model another stage-4 file with the same name token was given, else the
    token. A result that read a published set is labelled apart.
    """
    token_to_model: dict[str, str] = {}
    for seen in files:
        if seen.parts.stage == 4 and seen.record is not None and seen.record.model:
            token_to_model.setdefault(seen.parts.token, seen.record.model)
    out: dict[Path, tuple[str, str | None]] = {}
    for seen in files:
        record = seen.record or RunRecord(version=0)
        upstream = _upstream(seen, records) if seen.parts.stage == 5 else None
        if seen.parts.stage == 4:
            model = record.model
        else:
            model = record.target_model or (upstream.model if upstream else None)
        model = model or token_to_model.get(seen.parts.token, seen.parts.token)
        if _read_published(seen, upstream):
            model = published.result_label(model)  # its own row, apart from generated sets
        out[seen.path] = (model, record.dataset or (upstream.dataset if upstream else None))
    return out


def _samples(files: list[Seen], pairs: Mapping[str, str], records: Records) -> dict[Path, Path]:
    """Each judged sample's stage-4 file (stage-5 path -> stage-4 path, resolved). A stage-4
    file that was not among the inputs is added to files: the sample means nothing without it."""
    sample_of: dict[Path, Path] = {}
    given = {seen.path.resolve() for seen in files}
    for seen in list(files):
        if seen.parts.stage != 5:
            continue
        src = sample_source(seen.path, seen.record or RunRecord(version=0), pairs)
        if src is None:
            continue
        sample_of[seen.path] = src
        if src not in given:
            given.add(src)
            files.append(_describe(src, records))
    return sample_of


def _dataset(seen: Seen, recorded: str | None, overrides: Mapping[str, str], sample: bool) -> str:
    """The --dataset override, else what the records say, else the name; a sample takes its
    stage-4 file's dataset later (adopt_stage4)."""
    dataset = _override_for(seen.path, overrides) or recorded or infer_dataset(seen.parts.input)
    if dataset is None and sample:
        return ""
    if dataset is None:
        raise ReportError(
            f"{seen.path.name}: cannot tell the dataset from the name (want exactly one of "
            "'hard', 'toxic', '80k'/'safe'); name it with --hard/--toxic/--safe FILE "
            "or --dataset FILE=hard")
    return dataset


def scan_inputs(inputs: Iterable[str | Path], datasets: Mapping[str, str] | None = None,
                samples: Mapping[str, str] | None = None) -> list[ResultFile]:
    """Find the result files among inputs (files or folders) and describe each one.

    datasets maps a path, folder, file name or glob to a dataset and wins over the records
    and the name. samples maps a stage-5 file (path, name or glob) to the stage-4 file it
    judged a sample of, for files whose record does not say. The stage-4 file of every judged
    sample is read too, whether or not it is among the inputs.
    """
    overrides = dict(datasets or {})
    for key, ds in overrides.items():
        if ds not in DATASETS:
            raise ReportError(f"unknown dataset {ds!r} for {key} (use safe, hard or toxic)")
    records = Records()
    seen = [_describe(path, records) for path in _expand(inputs, records)]
    sample_of = _samples(seen, samples or {}, records)
    labels = _labels(seen, records)
    files: list[ResultFile] = []
    for s in seen:
        model, recorded = labels[s.path]
        design, floor = sample_design(s.record) if s.path in sample_of else ("", None)
        files.append(ResultFile(path=s.path, stage=s.parts.stage, kind=s.parts.kind, model=model,
                                dataset=_dataset(s, recorded, overrides, s.path in sample_of),
                                judge=s.parts.judge, complete=s.own.complete if s.own else None,
                                sample_of=sample_of.get(s.path), design=design, design_floor=floor,
                                record=s.record))
    files = adopt_stage4(files)
    _check_duplicates(files)
    return files


def _check_duplicates(files: Sequence[ResultFile]) -> None:
    """Refuse inputs that would count the same rows twice."""
    groups: dict[tuple, dict[str, list[Path]]] = {}
    for f in files:
        groups.setdefault((f.model, f.dataset, f.stage, f.judge, f.sample_of is not None),
                          {}).setdefault(f.kind, []).append(f.path)
    for (model, dataset, stage, judge, sample), kinds in groups.items():
        who = f"{model} on {dataset} ({'judge ' + judge if stage == 5 else 'keyword'}"
        who += ", judged sample)" if sample else ")"
        for kind, paths in kinds.items():
            if len(paths) > 1:
                listed = ", ".join(str(p) for p in paths)
                raise ReportError(f"several {kind} files for {who}: {listed}; give one")
        if "merged" in kinds and ({"rejected", "accepted"} & kinds.keys()):
            raise ReportError(f"both a merged file and rejected/accepted files for {who}; "
                              "give one or the other")

