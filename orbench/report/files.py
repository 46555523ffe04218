"""Finding the result files among the inputs and telling what each one holds.

A file's stage, kind, model and dataset come from its name, its `.run.json` and, for a
file the user named whose name says nothing, its columns.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from orbench import published
from orbench.constants import COL_ANSWER_CATEGORY, COL_IS_REJECTED
from orbench.report.common import DATASETS, ReportError, ResultFile
from orbench.report.rows import read_csv
from orbench.report.samples import adopt_stage4, sample_design, sample_source

_STAGE5_NAME = re.compile(r"^(?P<stem>.+)_response_check_(?P<kind>merged|failed)_(?P<judge>.+)$")
_STAGE4_NAME = re.compile(r"^(?P<model>.+?)_(?P<kind>merged|failed|rejected|accepted)_(?P<input>.+)$")
_DATASET_WORDS = {"hard": ("hard",), "toxic": ("toxic",), "safe": ("80k", "safe")}

def infer_dataset(name: str) -> str | None:
    """Dataset named by a file (or input-file) name, or None if none or several match."""
    low = name.lower()
    hits = [ds for ds, words in _DATASET_WORDS.items() if any(w in low for w in words)]
    return hits[0] if len(hits) == 1 else None


def parse_result_name(filename: str) -> dict | None:
    """Split a result file name into its parts; None if it is not a result file.

    Returns a dict with stage, kind, token (the model as spelt in the name), input
    (the part that names the dataset) and judge.
    """
    base = filename[:-4] if filename.lower().endswith(".csv") else filename
    if "_response_check_unscored_" in base:
        return None  # a copy of the merged file's unscored rows, not a result of its own
    m5 = _STAGE5_NAME.match(base)
    if m5:
        stem = m5["stem"]
        m4 = _STAGE4_NAME.match(stem)
        token, input_part = (m4["model"], m4["input"]) if m4 else (stem, stem)
        return {"stage": 5, "kind": m5["kind"], "token": token, "input": input_part,
                "judge": m5["judge"], "stem": stem}
    m4 = _STAGE4_NAME.match(base)
    if m4:
        if m4["model"].endswith("_moderation"):  # a stage-3 file, not a result
            return None
        return {"stage": 4, "kind": m4["kind"], "token": m4["model"], "input": m4["input"],
                "judge": "", "stem": base}
    return None


def run_json(csv_path: Path) -> dict | None:
    """The run settings written beside a CSV, if any and readable."""
    name = csv_path.name[:-4] if csv_path.name.lower().endswith(".csv") else csv_path.name
    path = csv_path.with_name(name + ".run.json")
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _expand(inputs: Iterable[str | Path]) -> list[Path]:
    """Files to read: named files as given, result files found in named folders."""
    out: list[Path] = []
    seen: set[Path] = set()
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = [p for p in sorted(path.rglob("*.csv")) if parse_result_name(p.name)]
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


def _describe(path: Path) -> dict:
    """parse_result_name, or for a file the user named whose name says nothing, its columns."""
    info = parse_result_name(path.name)
    if info is not None:
        return info
    cols = _sniff_columns(path)
    run = run_json(path) or {}
    if COL_ANSWER_CATEGORY in cols:
        return {"stage": 5, "kind": "merged", "token": path.stem, "input": path.stem,
                "judge": str(run.get("check_model") or "judge"), "stem": path.stem}
    if COL_IS_REJECTED in cols:
        return {"stage": 4, "kind": "merged", "token": path.stem, "input": path.stem,
                "judge": "", "stem": path.stem}
    raise ReportError(
        f"{path}: not a result file (no {COL_IS_REJECTED!r} or "
        f"{COL_ANSWER_CATEGORY!r} column, and the name does not say)")


def _stage5_run(path: Path, info: dict) -> dict:
    """A stage-5 file's run.json, else (a failed-calls file) the one beside its merged file."""
    own = run_json(path)
    if own is not None:
        return own
    sib = path.with_name(f"{info['stem']}_response_check_merged_{info['judge']}.csv")
    return run_json(sib) or {}


def _stage4_run(path: Path, info: dict) -> dict:
    """A stage-4 file's run.json, else (a failed or split file) the first one beside it."""
    own = run_json(path)
    if own is not None:
        return own
    for kind in ("merged", "rejected", "accepted", "failed"):
        sib = run_json(path.with_name(f"{info['token']}_{kind}_{info['input']}.csv"))
        if sib is not None:
            return sib
    return {}


def _read_published(path: Path, info: dict, run: dict) -> bool:
    """Whether a result read a published OR-Bench set, from .run.json's input_source (never
    from a file name). A stage-5 file asks the stage-4 file it judged (input_path, else the
    stage-4 file of its stem beside it)."""
    if published.is_published(run.get("input_source")):
        return True
    if info["stage"] != 5:
        return False
    upstream = Path(str(run["input_path"])) if run.get("input_path") else path.with_name(info["stem"] + ".csv")
    return published.is_published((run_json(upstream) or {}).get("input_source"))


def _name_models(parsed: Sequence[tuple[Path, dict]]) -> list[tuple[Path, dict, str, str, bool | None]]:
    """(path, info, model, judge, complete) per file.

    Model names: a run.json wins over the file name. Stage-4 names first, so that a file
    without a run.json (a judge file, or a sibling) can borrow the name another file with the
    same name token was given. A result that read a published set is labelled apart.
    """
    token_to_model: dict[str, str] = {}
    run4: dict[Path, str] = {}
    for path, info in parsed:
        if info["stage"] != 4:
            continue
        model = _stage4_run(path, info).get("model")
        if model:
            run4[path] = str(model)
            token_to_model.setdefault(info["token"], str(model))
    named: list[tuple[Path, dict, str, str, bool | None]] = []
    for path, info in parsed:
        own = run_json(path) or {}
        complete = own.get("complete") if isinstance(own.get("complete"), bool) else None
        judge = info["judge"]
        if info["stage"] == 4:
            model = run4.get(path) or token_to_model.get(info["token"], info["token"])
            run = _stage4_run(path, info)
        else:
            # The judge's own run.json, else the one beside its merged file (for a
            # failed-calls file), else the run.json of the stage-4 file it read.
            sib = path.with_name(f"{info['stem']}_response_check_merged_{judge}.csv")
            sib_run = run_json(sib) or {}
            judge = str(own.get("check_model") or sib_run.get("check_model") or judge)
            model = (own.get("target_model") or sib_run.get("target_model")
                     or (run_json(path.with_name(info["stem"] + ".csv")) or {}).get("model"))
            model = str(model or token_to_model.get(info["token"], info["token"]))
            run = own or sib_run
        if _read_published(path, info, run):
            model = published.result_label(model)  # its own row, apart from generated sets
        named.append((path, info, model, judge, complete))
    return named


def scan_inputs(inputs: Iterable[str | Path], datasets: Mapping[str, str] | None = None,
                samples: Mapping[str, str] | None = None) -> list[ResultFile]:
    """Find the result files among inputs (files or folders) and describe each one.

    datasets maps a path, folder, file name or glob to a dataset and wins over the name.
    samples maps a stage-5 file (path, name or glob) to the stage-4 file it judged a
    sample of, for files whose run.json does not say. The stage-4 file of every judged
    sample is read too, whether or not it is among the inputs.
    """
    overrides = dict(datasets or {})
    for key, ds in overrides.items():
        if ds not in DATASETS:
            raise ReportError(f"unknown dataset {ds!r} for {key} (use safe, hard or toxic)")
    entries = _expand(inputs)
    parsed = [(path, _describe(path)) for path in entries]
    sample_of: dict[Path, Path] = {}
    designs: dict[Path, tuple[str, float | None]] = {}
    seen = {p.resolve() for p in entries}
    for path, info in list(parsed):
        if info["stage"] != 5:
            continue
        run = _stage5_run(path, info)
        src = sample_source(path, run, samples or {})
        if src is None:
            continue
        sample_of[path] = src
        designs[path] = sample_design(run)
        if src not in seen:  # the stage-4 file was not given: read it anyway
            seen.add(src)
            parsed.append((src, _describe(src)))

    files: list[ResultFile] = []
    for path, info, model, judge, complete in _name_models(parsed):
        dataset = _override_for(path, overrides) or infer_dataset(info["input"])
        if dataset is None and path in sample_of:
            dataset = ""  # a sample takes its stage-4 file's dataset (adopt_stage4)
        if dataset is None:
            raise ReportError(
                f"{path.name}: cannot tell the dataset from the name (want exactly one of "
                "'hard', 'toxic', '80k'/'safe'); name it with --hard/--toxic/--safe FILE "
                "or --dataset FILE=hard")
        files.append(ResultFile(path=path, stage=info["stage"], kind=info["kind"],
                                model=model, dataset=dataset, judge=judge, complete=complete,
                                sample_of=sample_of.get(path), design=designs.get(path, ("", None))[0],
                                design_floor=designs.get(path, ("", None))[1]))
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

