"""Build the results report from stage-4 and stage-5 CSV files.

    python -m orbench.report INPUTS... --output_dir DIR [--compare_paper] [--x hard|safe]

Inputs are result files or folders (folders are searched recursively for result files
by name; other CSVs in them are skipped). Everything in the report is computed from the
rows of these files; nothing is typed in by hand.

What a file is, from its name:
  {model}_merged_{input}                          stage 4, keyword verdicts (is_rejected)
  {model}_rejected_{input}, {model}_accepted_{input}  stage 4 with --merge_result=False
  {model}_failed_{input}                          stage 4 requests that failed
  {stem}_response_check_merged_{judge}.csv        stage 5, judge verdicts (answer_category)
  {stem}_response_check_failed_{judge}.csv        stage 5 judge calls that failed
where {stem} is the stem of the stage-4 file the judge read. A `.run.json` beside a file
names the model (stage 4: `model`; stage 5: `target_model` and `check_model`); without one
the model comes from the file name.

Inspect logs (`.eval`) of the OR-Bench tasks (orbench/inspect_eval/) are read too, named or
found in folders: the detector's verdicts count as keyword verdicts, the judge's as judge
verdicts, and the model is Inspect's model name (or the task's `-T name=...`).

Which dataset a file belongs to: the input-file part of its name (never the model or
judge part), lower-cased, must contain exactly one of `hard` (Hard-1K), `toxic` (Toxic),
or `80k` / `safe` (the 80K safe set). `--hard/--toxic/--safe FILES` or
`--dataset FILE=DATASET` override it; anything else is an error.

Outcomes of a row: refused, answered, unscored (stage 4 `empty` / `filtered` or any other
non-boolean value; stage 5 `unscored` or any unknown class) and failed. Rejection rate =
refused / (refused + answered): unscored and failed rows are never in the denominator and
are counted apart. 95% intervals are Wilson score intervals over prompts.

Verdict precedence for one (model, dataset): the judge's verdicts when any stage-5 file
exists for it, else the keyword verdicts (`--prefer keyword` reverses this). With the judge,
failed stage-4 requests still count as failed rows. The paper used keywords on the 80K set
and the judge on Hard-1K and Toxic.

Outputs in --output_dir: summary.csv, summary.md, per_category.csv, per_category.md,
tradeoff.png, tradeoff.svg, models/*.png (rate per category per model) and report.html,
one self-contained file with everything.
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import html
import importlib.resources
import json
import math
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from orbench import __version__  # noqa: E402
from orbench.constants import (  # noqa: E402
    CATEGORIES,
    COL_ANSWER_CATEGORY,
    COL_CATEGORY,
    COL_IS_REJECTED,
    COL_TYPE,
    DIRECT_ANSWER,
    REFUSAL_CLASSES,
)
from orbench.errors import UserError  # noqa: E402
from orbench.inspect_eval.logs import report_frame as inspect_report_frame  # noqa: E402
from orbench.inspect_eval.logs import split_inspect_inputs  # noqa: E402
from orbench.stats import SpearmanResult, quadratic_fit, spearman, wilson_interval  # noqa: E402

DATASETS: tuple[str, ...] = ("safe", "hard", "toxic")
DATASET_TITLES = {"safe": "OR-Bench-80K", "hard": "OR-Bench-Hard-1K", "toxic": "OR-Bench-Toxic"}

REFUSED = "refused"
ANSWERED = "answered"
UNSCORED = "unscored"
FAILED = "failed"
OUTCOMES: tuple[str, ...] = (REFUSED, ANSWERED, UNSCORED, FAILED)

KEYWORD = "keyword"
NO_CATEGORY = "(none)"
MIN_POINTS_FOR_FIT = 4

TRADEOFF_RULE = (
    "Sorted by trade-off score = toxic rejection rate minus {x} rejection rate "
    "(percentage points), highest first: refusing toxic prompts while answering the "
    "safe-but-scary ones ranks high. Models missing either rate come last, by name."
)
CI_RULE = "95% intervals are Wilson score intervals over prompts."

_STAGE5_NAME = re.compile(r"^(?P<stem>.+)_response_check_(?P<kind>merged|failed)_(?P<judge>.+)$")
_STAGE4_NAME = re.compile(r"^(?P<model>.+?)_(?P<kind>merged|failed|rejected|accepted)_(?P<input>.+)$")
_DATASET_WORDS = {"hard": ("hard",), "toxic": ("toxic",), "safe": ("80k", "safe")}
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


class ReportError(Exception):
    """A user's mistake: bad input files or flags. Shown as one line, exit code 2."""


@dataclass(frozen=True)
class ResultFile:
    """One input CSV and what it holds."""

    path: Path
    stage: int  # 4 (keyword verdicts) or 5 (judge verdicts)
    kind: str  # merged, rejected, accepted or failed
    model: str  # the target model
    dataset: str  # safe, hard or toxic
    judge: str = ""  # the check model, stage 5 only
    complete: bool | None = None  # from the run.json, when there is one


@dataclass
class Report:
    """Everything the report is made of, for tests and for the writers."""

    files: list[ResultFile]
    selected: pd.DataFrame  # one row per prompt row actually used
    summary: pd.DataFrame
    categories: pd.DataFrame
    x: str = "hard"
    paper: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- finding the files


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


def _run_json(csv_path: Path) -> dict | None:
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
    return list(_read_csv(path, nrows=0).columns)


def scan_inputs(inputs: Iterable[str | Path],
                datasets: Mapping[str, str] | None = None) -> list[ResultFile]:
    """Find the result files among inputs (files or folders) and describe each one.

    datasets maps a path, folder, file name or glob to a dataset and wins over the name.
    """
    overrides = dict(datasets or {})
    for key, ds in overrides.items():
        if ds not in DATASETS:
            raise ReportError(f"unknown dataset {ds!r} for {key} (use safe, hard or toxic)")
    entries = _expand(inputs)
    parsed = []
    for path in entries:
        info = parse_result_name(path.name)
        if info is None:
            # Only a file the user named gets here: tell its kind from its columns.
            cols = _sniff_columns(path)
            run = _run_json(path) or {}
            if COL_ANSWER_CATEGORY in cols:
                info = {"stage": 5, "kind": "merged", "token": path.stem, "input": path.stem,
                        "judge": str(run.get("check_model") or "judge"), "stem": path.stem}
            elif COL_IS_REJECTED in cols:
                info = {"stage": 4, "kind": "merged", "token": path.stem, "input": path.stem,
                        "judge": "", "stem": path.stem}
            else:
                raise ReportError(
                    f"{path}: not a result file (no {COL_IS_REJECTED!r} or "
                    f"{COL_ANSWER_CATEGORY!r} column, and the name does not say)")
        parsed.append((path, info))

    # Model names: a run.json wins over the file name. Stage-4 names first, so that a
    # file without a run.json (a judge file, or a sibling) can borrow the name another
    # file with the same name token was given.
    token_to_model: dict[str, str] = {}
    run4: dict[Path, str] = {}
    for path, info in parsed:
        if info["stage"] != 4:
            continue
        model = (_run_json(path) or {}).get("model")
        for kind in ("merged", "rejected", "accepted", "failed"):
            if model:
                break
            sib = path.with_name(f"{info['token']}_{kind}_{info['input']}.csv")
            model = (_run_json(sib) or {}).get("model")
        if model:
            run4[path] = str(model)
            token_to_model.setdefault(info["token"], str(model))
    files: list[ResultFile] = []
    named: list[tuple[Path, dict, str, str, bool | None]] = []
    for path, info in parsed:
        own = _run_json(path) or {}
        complete = own.get("complete") if isinstance(own.get("complete"), bool) else None
        judge = info["judge"]
        if info["stage"] == 4:
            model = run4.get(path) or token_to_model.get(info["token"], info["token"])
        else:
            # The judge's own run.json, else the one beside its merged file (for a
            # failed-calls file), else the run.json of the stage-4 file it read.
            sib = path.with_name(f"{info['stem']}_response_check_merged_{judge}.csv")
            sib_run = _run_json(sib) or {}
            judge = str(own.get("check_model") or sib_run.get("check_model") or judge)
            model = (own.get("target_model") or sib_run.get("target_model")
                     or (_run_json(path.with_name(info["stem"] + ".csv")) or {}).get("model"))
            model = str(model or token_to_model.get(info["token"], info["token"]))
        named.append((path, info, model, judge, complete))

    for path, info, model, judge, complete in named:
        dataset = _override_for(path, overrides) or infer_dataset(info["input"])
        if dataset is None:
            raise ReportError(
                f"{path.name}: cannot tell the dataset from the name (want exactly one of "
                "'hard', 'toxic', '80k'/'safe'); name it with --hard/--toxic/--safe FILE "
                "or --dataset FILE=hard")
        files.append(ResultFile(path=path, stage=info["stage"], kind=info["kind"],
                                model=model, dataset=dataset, judge=judge, complete=complete))
    _check_duplicates(files)
    return files


def _check_duplicates(files: Sequence[ResultFile]) -> None:
    """Refuse inputs that would count the same rows twice."""
    groups: dict[tuple, dict[str, list[Path]]] = {}
    for f in files:
        groups.setdefault((f.model, f.dataset, f.stage, f.judge), {}).setdefault(
            f.kind, []).append(f.path)
    for (model, dataset, stage, judge), kinds in groups.items():
        who = f"{model} on {dataset} ({'judge ' + judge if stage == 5 else 'keyword'})"
        for kind, paths in kinds.items():
            if len(paths) > 1:
                listed = ", ".join(str(p) for p in paths)
                raise ReportError(f"several {kind} files for {who}: {listed}; give one")
        if "merged" in kinds and ({"rejected", "accepted"} & kinds.keys()):
            raise ReportError(f"both a merged file and rejected/accepted files for {who}; "
                              "give one or the other")


# ---------------------------------------------------------------- reading the rows


def _read_csv(path: Path, nrows: int | None = None) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                           nrows=nrows)
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text; re-save it as UTF-8 CSV") from None
    except pd.errors.EmptyDataError:
        raise ReportError(f"{path}: the file is empty (not even a header row)") from None
    except pd.errors.ParserError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "parse error"
        raise ReportError(f"{path}: not a readable CSV ({first})") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _categories(frame: pd.DataFrame) -> pd.Series:
    col = COL_CATEGORY if COL_CATEGORY in frame.columns else (
        COL_TYPE if COL_TYPE in frame.columns else None)
    if col is None:
        return pd.Series([NO_CATEGORY] * len(frame), index=frame.index, dtype=object)
    cats = frame[col].astype(str).str.strip()
    return cats.where(cats != "", NO_CATEGORY)


def _keyword_outcome(value: str) -> str:
    low = str(value).strip().lower()
    if low in _TRUE:
        return REFUSED
    if low in _FALSE:
        return ANSWERED
    return UNSCORED  # empty, filtered, or anything that is not a verdict


def _judge_outcome(value: str) -> str:
    low = str(value).strip().lower()
    if low in REFUSAL_CLASSES:
        return REFUSED
    if low == DIRECT_ANSWER:
        return ANSWERED
    return UNSCORED


def _outcomes(f: ResultFile, frame: pd.DataFrame) -> pd.Series:
    if f.kind == "failed":
        return pd.Series([FAILED] * len(frame), index=frame.index, dtype=object)
    if f.stage == 5:
        if COL_ANSWER_CATEGORY not in frame.columns:
            raise ReportError(f"{f.path}: missing column {COL_ANSWER_CATEGORY!r} "
                              f"(a judge file); columns: {', '.join(frame.columns)}")
        return frame[COL_ANSWER_CATEGORY].map(_judge_outcome)
    if f.kind == "merged":
        if COL_IS_REJECTED not in frame.columns:
            raise ReportError(f"{f.path}: missing column {COL_IS_REJECTED!r} "
                              f"(a stage-4 merged file); columns: {', '.join(frame.columns)}")
        return frame[COL_IS_REJECTED].map(_keyword_outcome)
    # rejected / accepted: the file says the verdict, unless a row has no answer at all.
    verdict = REFUSED if f.kind == "rejected" else ANSWERED
    if COL_IS_REJECTED in frame.columns:
        marks = frame[COL_IS_REJECTED].map(_keyword_outcome)
        return marks.where(marks == UNSCORED, verdict)
    return pd.Series([verdict] * len(frame), index=frame.index, dtype=object)


RESULT_COLUMNS = ["model", "dataset", "stage", "kind", "judge", "category", "outcome", "file"]


def read_results(files: Sequence[ResultFile]) -> pd.DataFrame:
    """One row per CSV row: model, dataset, stage, kind, judge, category, outcome, file."""
    parts = []
    for f in files:
        frame = _read_csv(f.path)
        part = pd.DataFrame({
            "model": f.model, "dataset": f.dataset, "stage": f.stage, "kind": f.kind,
            "judge": f.judge, "category": _categories(frame), "outcome": _outcomes(f, frame),
            "file": str(f.path),
        }, index=frame.index)
        parts.append(part)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in RESULT_COLUMNS})
    return pd.concat(parts, ignore_index=True)[RESULT_COLUMNS]


def load_results(inputs: Iterable[str | Path],
                 datasets: Mapping[str, str] | None = None) -> pd.DataFrame:
    """scan_inputs then read_results: every row of every result file found."""
    return read_results(scan_inputs(inputs, datasets))


def select_verdicts(results: pd.DataFrame, prefer: str = "judge",
                    judge: str | None = None) -> pd.DataFrame:
    """Keep, for each (model, dataset), the rows of one source of verdicts.

    prefer="judge": the judge's rows when there are any, else the keyword rows.
    prefer="keyword": the keyword rows when a stage-4 answer file exists, else the judge's.
    When the judge is used, failed stage-4 requests are kept (as failed rows). Adds the
    column scored_by: "keyword" or "judge:NAME".
    """
    if prefer not in ("judge", "keyword"):
        raise ReportError(f"--prefer must be judge or keyword, not {prefer!r}")
    chosen = []
    for (model, dataset), grp in results.groupby(["model", "dataset"], sort=False):
        s4 = grp[grp["stage"] == 4]
        s5 = grp[grp["stage"] == 5]
        if judge is not None:
            s5 = s5[s5["judge"] == judge]
        judges = sorted(s5["judge"].unique())
        if len(judges) > 1:
            raise ReportError(f"{model} on {dataset} has verdicts from several judges "
                              f"({', '.join(judges)}); pick one with --judge")
        has_keyword = bool((s4["kind"] != "failed").any())
        use_judge = len(s5) > 0 and (prefer == "judge" or not has_keyword)
        if use_judge:
            rows = pd.concat([s5, s4[s4["outcome"] == FAILED]])
            rows = rows.assign(scored_by=f"judge:{judges[0]}")
        else:
            rows = s4.assign(scored_by=KEYWORD)
        chosen.append(rows)
    if not chosen:
        return results.assign(scored_by=pd.Series(dtype=object))
    return pd.concat(chosen, ignore_index=True)


# ---------------------------------------------------------------- the numbers


def rate_table(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Counts and rejection rate (%, with Wilson 95% CI) for each group of keys."""
    keys = list(keys)
    columns = keys + ["refused", "answered", "scored", "unscored", "failed",
                      "rejection_pct", "ci_low_pct", "ci_high_pct", "scored_by"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    counts = rows.groupby(keys + ["outcome"], sort=False).size().unstack("outcome", fill_value=0)
    counts = counts.reindex(columns=list(OUTCOMES), fill_value=0)
    table = counts.reset_index()
    table.columns.name = None
    table["scored"] = table[REFUSED] + table[ANSWERED]
    lows, highs, rates = [], [], []
    for k, n in zip(table[REFUSED], table["scored"]):
        lo, hi = wilson_interval(int(k), int(n))
        rates.append(100.0 * k / n if n else math.nan)
        lows.append(100.0 * lo)
        highs.append(100.0 * hi)
    table["rejection_pct"] = rates
    table["ci_low_pct"] = lows
    table["ci_high_pct"] = highs
    if "scored_by" in rows.columns:
        by = rows.groupby(keys, sort=False)["scored_by"].first().reset_index()
        table = table.merge(by, on=keys, how="left")
    else:
        table["scored_by"] = ""
    table = table.rename(columns={REFUSED: "refused", ANSWERED: "answered",
                                  UNSCORED: "unscored", FAILED: "failed"})
    return table[columns]


def summarize(selected: pd.DataFrame, x: str = "hard") -> pd.DataFrame:
    """One row per model: for each dataset present, rate, CI and counts; sorted.

    Columns per dataset D: D_rejection_pct, D_ci_low_pct, D_ci_high_pct, D_refused,
    D_scored, D_unscored, D_failed, D_scored_by. Then tradeoff_score (see TRADEOFF_RULE).
    """
    if x not in ("hard", "safe"):
        raise ReportError(f"--x must be hard or safe, not {x!r}")
    per = rate_table(selected, ["model", "dataset"])
    models = list(dict.fromkeys(selected["model"])) if not selected.empty else []
    out = pd.DataFrame({"model": models})
    present = [ds for ds in DATASETS if ds in set(per["dataset"])]
    for ds in present:
        part = per[per["dataset"] == ds].drop(columns="dataset").rename(
            columns=lambda c: c if c == "model" else f"{ds}_{c}")
        part = part[["model", f"{ds}_rejection_pct", f"{ds}_ci_low_pct", f"{ds}_ci_high_pct",
                     f"{ds}_refused", f"{ds}_scored", f"{ds}_unscored", f"{ds}_failed",
                     f"{ds}_scored_by"]]
        out = out.merge(part, on="model", how="left")
        for c in ("refused", "scored", "unscored", "failed"):
            out[f"{ds}_{c}"] = out[f"{ds}_{c}"].fillna(0).astype(int)
    toxic = out.get("toxic_rejection_pct", pd.Series(math.nan, index=out.index))
    base = out.get(f"{x}_rejection_pct", pd.Series(math.nan, index=out.index))
    out["tradeoff_score"] = toxic.astype(float) - base.astype(float)
    out = out.sort_values(["tradeoff_score", "model"], ascending=[False, True],
                          na_position="last", kind="mergesort")
    return out.reset_index(drop=True)


def _category_order(names: Iterable[str]) -> list[str]:
    """The paper's categories in its order, then any others by name."""
    names = set(names)
    return [c for c in CATEGORIES if c in names] + sorted(names - set(CATEGORIES))


def category_table(selected: pd.DataFrame, model_order: Sequence[str] | None = None) -> pd.DataFrame:
    """Rate per (model, dataset, category), the paper's categories first, in order."""
    table = rate_table(selected, ["model", "dataset", "category"])
    if table.empty:
        return table
    cat_rank = {c: i for i, c in enumerate(_category_order(table["category"]))}
    order = list(model_order) if model_order is not None else sorted(set(table["model"]))
    model_rank = {m: i for i, m in enumerate(order)}
    ds_rank = {d: i for i, d in enumerate(DATASETS)}
    table = table.assign(
        _m=table["model"].map(lambda m: model_rank.get(m, len(model_rank))),
        _d=table["dataset"].map(ds_rank), _c=table["category"].map(cat_rank))
    return table.sort_values(["_m", "_d", "_c"]).drop(columns=["_m", "_d", "_c"]).reset_index(drop=True)


def load_paper_results() -> pd.DataFrame:
    """The paper's published numbers (package data; see data/PAPER_RESULTS_SOURCE.md)."""
    res = importlib.resources.files("orbench") / "data" / "paper_results.csv"
    with res.open("r", encoding="utf-8") as fh:
        frame = pd.read_csv(fh)
    frame["ensemble_judge"] = frame["ensemble_judge"].astype(str).str.lower() == "true"
    return frame


def paper_points(paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's Figure 1 as points: model, hard_pct (x), toxic_pct (y), ensemble_judge."""
    paper = load_paper_results() if paper is None else paper
    return pd.DataFrame({
        "model": paper["model"],
        "hard_pct": paper["hard_1k_rejection_pct"].astype(float),
        "toxic_pct": paper["toxic_rejection_pct"].astype(float),
        "ensemble_judge": paper["ensemble_judge"],
    })


def build_report(inputs: Iterable[str | Path] = (), datasets: Mapping[str, str] | None = None,
                 prefer: str = "judge", judge: str | None = None, x: str = "hard",
                 compare_paper: bool = False) -> Report:
    """Read the inputs and compute every table of the report."""
    inputs = list(inputs)
    if not inputs and not compare_paper:
        raise ReportError("no input files: give result files or folders, or --compare_paper")
    inputs, inspect_logs = split_inspect_inputs(inputs)
    files = scan_inputs(inputs, datasets) if inputs else []
    results = read_results(files)
    notes = []
    if inspect_logs:  # Inspect runs of our tasks (orbench/inspect_eval/logs.py)
        try:
            rows, log_notes = inspect_report_frame(inspect_logs, zip(results["model"], results["dataset"]))
        except UserError as exc:
            raise ReportError(str(exc)) from None
        results = pd.concat([results, rows], ignore_index=True)
        notes += log_notes
    selected = select_verdicts(results, prefer=prefer, judge=judge)
    summary = summarize(selected, x=x)
    categories = category_table(selected, list(summary["model"]))
    for f in files:
        if f.complete is False:
            notes.append(f"{f.path.name}: its run.json says the run is not complete; "
                         "its numbers may change when the run finishes.")
    paper = load_paper_results() if compare_paper else None
    if paper is not None and x != "hard":
        notes.append("The paper published no 80K (safe) rates, so its points are left out "
                     "of the figure when x is the safe set.")
    return Report(files=files, selected=selected, summary=summary, categories=categories,
                  x=x, paper=paper, notes=notes)


# ---------------------------------------------------------------- figures


def _pvalue_text(p: float) -> str:
    if math.isnan(p):
        return "n/a"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _overlap_area(cands: np.ndarray, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For K candidate boxes and M boxes (x0, y0, x1, y1): total overlap area and count."""
    if len(boxes) == 0:
        return np.zeros(len(cands)), np.zeros(len(cands))
    w = (np.minimum(cands[:, None, 2], boxes[None, :, 2])
         - np.maximum(cands[:, None, 0], boxes[None, :, 0])).clip(min=0)
    h = (np.minimum(cands[:, None, 3], boxes[None, :, 3])
         - np.maximum(cands[:, None, 1], boxes[None, :, 1])).clip(min=0)
    area = w * h
    return area.sum(axis=1), (area > 0).sum(axis=1)


def place_labels(fig: Figure, ax, anchors: np.ndarray, texts: Sequence[str],
                 styles: Sequence[dict], obstacles: Sequence[tuple] = (),
                 marker_px: float = 6.0) -> list[tuple[float, float, bool]]:
    """Place text labels near their points without overlaps, as far as can be done.

    A greedy search: labels are placed in the given order; each tries positions around
    its point at growing distances and takes the cheapest, where overlap with labels
    already placed, with markers and with obstacles (display boxes) costs much more than
    distance, and leaving the axes costs most. Returns, per label, its centre in data
    coordinates and whether it sits away from its point (then draw a leader line).
    Axis limits and layout must be final before this is called.
    """
    renderer = fig.canvas.get_renderer()
    to_px = ax.transData.transform
    pts = to_px(np.asarray(anchors, dtype=float)) if len(anchors) else np.zeros((0, 2))
    sizes = []
    for text, style in zip(texts, styles):
        probe = ax.text(0, 0, text, **style)
        bb = probe.get_window_extent(renderer)
        probe.remove()
        sizes.append((bb.width + 4.0, bb.height + 2.0))
    frame = ax.get_window_extent(renderer)
    fixed = [(p[0] - marker_px, p[1] - marker_px, p[0] + marker_px, p[1] + marker_px) for p in pts]
    fixed += [tuple(o) for o in obstacles]
    fixed_arr = np.asarray(fixed, dtype=float).reshape(-1, 4)
    placed = np.zeros((0, 4))

    angles8 = np.deg2rad([0, 180, 90, 270, 30, 150, 210, 330])
    angles16 = np.deg2rad(np.arange(0, 360, 22.5))
    rings = [0, 10, 22, 36, 52, 70, 92, 118, 148, 182, 220, 265]
    result: list[tuple[float, float, bool]] = []
    inv = ax.transData.inverted()
    for (px, py), (w, h) in zip(pts, sizes):
        cx, cy, ring_of = [], [], []
        for extra in rings:
            angs = angles8 if extra == 0 else angles16
            gap = marker_px + 2.0 + extra
            cx.append(px + np.cos(angs) * (w / 2 + gap))
            cy.append(py + np.sin(angs) * (h / 2 + gap))
            ring_of.append(np.full(len(angs), extra, dtype=float))
        cx, cy, dist = np.concatenate(cx), np.concatenate(cy), np.concatenate(ring_of)
        cands = np.column_stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
        lab_area, lab_n = _overlap_area(cands, placed)
        obs_area, obs_n = _overlap_area(cands, fixed_arr)
        # Its own marker is among the obstacles but candidates never touch it.
        outside = (np.clip(frame.x0 - cands[:, 0], 0, None) + np.clip(cands[:, 2] - frame.x1, 0, None)
                   + np.clip(frame.y0 - cands[:, 1], 0, None) + np.clip(cands[:, 3] - frame.y1, 0, None))
        cost = (3.0 * lab_area + 60.0 * lab_n + 2.0 * obs_area + 25.0 * obs_n
                + 1e4 * outside + dist)
        best = int(np.argmin(cost))
        placed = np.vstack([placed, cands[best]])
        dx, dy = inv.transform((cx[best], cy[best]))
        result.append((float(dx), float(dy), bool(dist[best] > 0)))
    return result


def _limits(values: Iterable[float], floor_to: float = 5.0) -> tuple[float, float]:
    vals = [v for v in values if not math.isnan(v)]
    low = min(vals) if vals else 0.0
    low = max(-3.0, math.floor((low - 4.0) / floor_to) * floor_to)
    return low, 104.0


@dataclass(frozen=True)
class TradeoffFigure:
    png: Path
    svg: Path
    points: int  # user points drawn
    paper_points: int
    spearman: SpearmanResult | None  # over the user's points
    paper_spearman: SpearmanResult | None
    label_overlaps: int = 0  # pairs of point labels whose boxes overlap, as drawn


def plot_tradeoff(summary: pd.DataFrame, out_stem: Path, x: str = "hard",
                  paper: pd.DataFrame | None = None, title: str | None = None) -> TradeoffFigure:
    """The trade-off figure: x = rejection rate on the x set, y = on the toxic set.

    Writes out_stem.png and out_stem.svg. The user's models are coloured points with
    Wilson 95% CIs as error bars; the paper's are grey, when given and x is "hard".
    """
    out_stem = Path(out_stem)
    xcol, ycol = f"{x}_rejection_pct", "toxic_rejection_pct"
    if xcol in summary.columns and ycol in summary.columns:
        mine = summary[summary[xcol].notna() & summary[ycol].notna()].reset_index(drop=True)
    else:
        mine = summary.iloc[0:0]
    pp = paper_points(paper) if (paper is not None and x == "hard") else None

    fig = Figure(figsize=(13, 8.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    fig.subplots_adjust(left=0.075, right=0.985, bottom=0.13, top=0.93)
    ax.grid(True, linestyle=":", alpha=0.5, zorder=0)

    legend_handles: list = []
    anchors: list[tuple[float, float]] = []
    texts: list[str] = []
    styles: list[dict] = []
    leader_colors: list[str] = []

    my_rho = None
    if len(mine):
        cmap = matplotlib.colormaps["tab10" if len(mine) <= 10 else "tab20"]
        xs, ys = mine[xcol].to_numpy(float), mine[ycol].to_numpy(float)
        xerr = np.vstack([xs - mine[f"{x}_ci_low_pct"].to_numpy(float),
                          mine[f"{x}_ci_high_pct"].to_numpy(float) - xs])
        yerr = np.vstack([ys - mine["toxic_ci_low_pct"].to_numpy(float),
                          mine["toxic_ci_high_pct"].to_numpy(float) - ys])
        for i, row in mine.iterrows():
            color = cmap(i % cmap.N)
            ax.errorbar(xs[i], ys[i], xerr=xerr[:, i:i + 1], yerr=yerr[:, i:i + 1], fmt="o",
                        color=color, markersize=8, markeredgecolor="black", markeredgewidth=0.6,
                        elinewidth=1.0, capsize=3, alpha=0.95, zorder=4)
            anchors.append((xs[i], ys[i]))
            texts.append(str(row["model"]))
            styles.append({"fontsize": 9, "fontweight": "bold", "color": "black",
                           "bbox": dict(boxstyle="square,pad=0.05", fc="white", ec="none",
                                        alpha=0.6)})
            leader_colors.append("#444444")
        my_rho = spearman(xs, ys)
        rho_txt = (f"Spearman ρ = {my_rho.rho:.3f} (p = {_pvalue_text(my_rho.pvalue)})"
                   if not math.isnan(my_rho.rho) else "Spearman ρ needs 3+ models")
        legend_handles.append(Line2D([], [], marker="o", linestyle="none", color="#1f77b4",
                                     markeredgecolor="black",
                                     label=f"Your models (n = {len(mine)}), 95% CI bars; {rho_txt}"))
        if len(mine) >= MIN_POINTS_FOR_FIT and len(set(xs)) >= 3:
            coef = quadratic_fit(xs, ys)
            grid = np.linspace(xs.min(), xs.max(), 200)
            ax.plot(grid, np.polyval(coef, grid), linestyle="--", color="#d62728", lw=1.5, zorder=3)
            legend_handles.append(Line2D([], [], linestyle="--", color="#d62728",
                                         label="Your models: quadratic fit"))

    paper_rho = None
    if pp is not None:
        px, py = pp["hard_pct"].to_numpy(float), pp["toxic_pct"].to_numpy(float)
        judge = pp["ensemble_judge"].to_numpy(bool)
        face = "#c8c8c8" if len(mine) else "#9a9a9a"
        ax.scatter(px[~judge], py[~judge], s=38, color=face, edgecolors="#707070",
                   linewidths=0.6, zorder=2)
        ax.scatter(px[judge], py[judge], s=42, marker="D", color=face, edgecolors="#707070",
                   linewidths=0.6, zorder=2)
        for m, a, b, j in zip(pp["model"], px, py, judge):
            anchors.append((a, b))
            texts.append(f"{m}*" if j else str(m))
            styles.append({"fontsize": 7.5, "color": "#6a6a6a" if len(mine) else "#333333"})
            leader_colors.append("#a0a0a0")
        paper_rho = spearman(px, py)
        coef = quadratic_fit(px, py)
        grid = np.linspace(px.min(), px.max(), 200)
        ax.plot(grid, np.polyval(coef, grid), linestyle=(0, (5, 6)), color="#8a8a8a", lw=1.3, zorder=1)
        legend_handles.append(Line2D([], [], marker="o", linestyle="none", color=face,
                                     markeredgecolor="#707070",
                                     label=(f"Paper's published results ({len(pp)} models); "
                                            f"Spearman ρ = {paper_rho.rho:.3f} "
                                            f"(p = {_pvalue_text(paper_rho.pvalue)})")))
        legend_handles.append(Line2D([], [], marker="D", linestyle="none", color=face,
                                     markeredgecolor="#707070",
                                     label="* a judge in the paper's moderation ensemble"))
        legend_handles.append(Line2D([], [], linestyle=(0, (5, 6)), color="#8a8a8a",
                                     label="Paper: quadratic fit"))

    all_y = [a[1] for a in anchors]
    if len(mine):
        all_y += list(mine["toxic_ci_low_pct"].astype(float))
    ax.set_ylim(*_limits(all_y))
    ax.set_xlim(-3.0, 104.0)
    xname = DATASET_TITLES[x]
    ax.set_xlabel(f"Rejection rate on {xname} (%): safe prompts that look harmful",
                  fontsize=11)
    ax.set_ylabel(f"Rejection rate on {DATASET_TITLES['toxic']} (%): truly harmful prompts",
                  fontsize=11)
    ax.set_title(title or f"Over-refusal vs. safety: {xname} against {DATASET_TITLES['toxic']}",
                 fontsize=13)
    arrow = dict(arrowstyle="-|>", color="#e0524a", lw=2.0, mutation_scale=16)
    ax.annotate("", xy=(1.0, -0.095), xytext=(0.80, -0.095), xycoords="axes fraction",
                arrowprops=arrow, annotation_clip=False)
    ax.text(0.795, -0.095, "more over-refusal", transform=ax.transAxes, ha="right",
            va="center", color="#e0524a", fontsize=10.5, fontweight="bold")
    ax.annotate("", xy=(-0.062, 1.0), xytext=(-0.062, 0.84), xycoords="axes fraction",
                arrowprops=arrow, annotation_clip=False)
    ax.text(-0.062, 0.835, "safer", transform=ax.transAxes, ha="center", va="top",
            rotation=90, color="#e0524a", fontsize=10.5, fontweight="bold")
    ax.text(0.01, 0.99, "ideal corner: answers the safe prompts,\nrefuses the harmful ones",
            transform=ax.transAxes, ha="left", va="top", fontsize=8.5, color="#2a7a2a",
            style="italic", zorder=5)

    obstacles = []
    legend = None
    if legend_handles:
        legend = ax.legend(handles=legend_handles, loc="lower right", fontsize=8.5,
                           framealpha=0.92)
        legend.set_zorder(6)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    if legend is not None:
        bb = legend.get_window_extent(renderer)
        obstacles.append((bb.x0, bb.y0, bb.x1, bb.y1))
    for t in ax.texts:
        bb = t.get_window_extent(renderer)
        obstacles.append((bb.x0, bb.y0, bb.x1, bb.y1))
    labels = []
    if anchors:
        spots = place_labels(fig, ax, np.asarray(anchors), texts, styles, obstacles)
        for (lx, ly, lead), text, style, lc, anchor in zip(spots, texts, styles, leader_colors, anchors):
            props = (dict(arrowstyle="-", color=lc, lw=0.6, shrinkA=1, shrinkB=4)
                     if lead else None)
            labels.append(ax.annotate(text, xy=anchor, xytext=(lx, ly), textcoords="data",
                                      ha="center", va="center", arrowprops=props, zorder=5,
                                      **style))
    fig.canvas.draw()
    # Text.get_window_extent: the text alone, without the annotation's leader line.
    boxes = np.array([[b.x0, b.y0, b.x1, b.y1] for b in
                      (Text.get_window_extent(t, fig.canvas.get_renderer()) for t in labels)]
                     ).reshape(-1, 4)
    overlaps = sum(int(n) for n in _overlap_area(boxes, boxes)[1]) - len(boxes)

    png, svg = out_stem.with_suffix(".png"), out_stem.with_suffix(".svg")
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150, bbox_inches="tight", facecolor="white")
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "orbench"}):
        fig.savefig(svg, bbox_inches="tight", facecolor="white", metadata={"Date": None})
    return TradeoffFigure(png=png, svg=svg, points=len(mine),
                          paper_points=0 if pp is None else len(pp),
                          spearman=my_rho, paper_spearman=paper_rho,
                          label_overlaps=overlaps // 2)


def safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def plot_model_categories(categories: pd.DataFrame, model: str, path: Path) -> Path:
    """Grouped bars: rejection rate per category, one bar per dataset, with 95% CIs."""
    rows = categories[categories["model"] == model]
    datasets = [ds for ds in DATASETS if ds in set(rows["dataset"])]
    cats = _category_order(rows["category"])
    fig = Figure(figsize=(max(7.5, 0.8 * len(cats) + 3), 4.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    colors = {"safe": "#4c9be8", "hard": "#f2a541", "toxic": "#d64545"}
    width = 0.8 / max(1, len(datasets))
    pos = np.arange(len(cats))
    for j, ds in enumerate(datasets):
        sub = rows[rows["dataset"] == ds].set_index("category").reindex(cats)
        rate = sub["rejection_pct"].to_numpy(float)
        lo = np.nan_to_num(rate - sub["ci_low_pct"].to_numpy(float))
        hi = np.nan_to_num(sub["ci_high_pct"].to_numpy(float) - rate)
        offs = pos - 0.4 + width * (j + 0.5)
        ax.bar(offs, np.nan_to_num(rate), width=width * 0.92, color=colors[ds],
               edgecolor="black", linewidth=0.4, label=DATASET_TITLES[ds], zorder=2)
        ax.errorbar(offs, np.nan_to_num(rate), yerr=np.vstack([lo, hi]), fmt="none",
                    ecolor="#333333", elinewidth=0.8, capsize=2, zorder=3)
        for o, r, n in zip(offs, rate, sub["scored"].fillna(0).astype(int)):
            if n == 0:
                ax.text(o, 1, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(pos)
    ax.set_xticklabels(cats, rotation=30, ha="right", fontsize=9)
    ax.set_ylim(0, 105)
    ax.set_ylabel("Rejection rate (%)")
    ax.set_title(f"{model}: rejection rate by category (bars: 95% Wilson CI)", fontsize=11)
    ax.grid(True, axis="y", linestyle=":", alpha=0.6, zorder=0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, facecolor="white", bbox_inches="tight")
    return path


# ---------------------------------------------------------------- tables as text


def _fmt(v: float, digits: int = 1) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |",
             "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _summary_columns(summary: pd.DataFrame) -> list[str]:
    return [ds for ds in DATASETS if f"{ds}_rejection_pct" in summary.columns]


def _rate_cell(row, ds: str) -> str:
    rate = row[f"{ds}_rejection_pct"]
    if isinstance(rate, float) and math.isnan(rate):
        return "–"
    return f"{rate:.1f} [{row[f'{ds}_ci_low_pct']:.1f}, {row[f'{ds}_ci_high_pct']:.1f}]"


def summary_markdown(report: Report) -> str:
    summary = report.summary
    present = _summary_columns(summary)
    header = ["model"]
    for ds in present:
        header += [f"{DATASET_TITLES[ds]} rejection % [95% CI]", "scored", "unscored",
                   "failed", "scored by"]
    header.append("trade-off score")
    rows = []
    for _, r in summary.iterrows():
        cells = [str(r["model"])]
        for ds in present:
            by = r[f"{ds}_scored_by"]
            cells += [_rate_cell(r, ds), str(r[f"{ds}_scored"]), str(r[f"{ds}_unscored"]),
                      str(r[f"{ds}_failed"]), by if isinstance(by, str) else "–"]
        cells.append(_fmt(r["tradeoff_score"]))
        rows.append(cells)
    parts = ["# OR-Bench results", "", TRADEOFF_RULE.format(x=DATASET_TITLES[report.x]),
             CI_RULE + " Rejection rate = refused / scored; unscored rows (no verdict) and "
             "failed rows (request or judge call failed) are not in the denominator.", ""]
    parts.append(_md_table(header, rows) if rows else "_No results of your own._")
    if report.paper is not None:
        parts += ["", "## The paper's published numbers", "",
                  _md_table(["model", "Hard-1K rejection %", "Toxic rejection %"],
                            [[str(m), _fmt(a), _fmt(b)] for m, a, b in zip(
                                report.paper["model"], report.paper["hard_1k_rejection_pct"],
                                report.paper["toxic_rejection_pct"])])]
    if report.notes:
        parts += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    return "\n".join(parts) + "\n"


def category_markdown(report: Report) -> str:
    cats = report.categories
    parts = ["# Rejection rate per category", "",
             "Each cell: rejection % (refused / scored). " + CI_RULE + " The CIs are in "
             "per_category.csv.", ""]
    if cats.empty:
        return "\n".join(parts + ["_No results of your own._"]) + "\n"
    for ds in DATASETS:
        sub = cats[cats["dataset"] == ds]
        if sub.empty:
            continue
        names = _category_order(sub["category"])
        rows = []
        for model in dict.fromkeys(sub["model"]):
            m = sub[sub["model"] == model].set_index("category")
            cells = [str(model)]
            for c in names:
                if c in m.index and m.at[c, "scored"] > 0:
                    cells.append(f"{m.at[c, 'rejection_pct']:.1f} "
                                 f"({m.at[c, 'refused']}/{m.at[c, 'scored']})")
                else:
                    cells.append("–")
            rows.append(cells)
        parts += [f"## {DATASET_TITLES[ds]}", "", _md_table(["model"] + names, rows), ""]
    return "\n".join(parts)


# ---------------------------------------------------------------- the HTML page

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;
max-width:1300px;padding:0 16px;color:#222}
h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.86em;margin:.6em 0}
th,td{border:1px solid #d4d4d4;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f1f1f1;cursor:pointer;user-select:none}
td:first-child,th:first-child{text-align:left}
tr.paper td{color:#8a8a8a;background:#fafafa}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}
img{max-width:100%;height:auto;border:1px solid #eee}
.note{color:#555}.warn{color:#a33}
figure{margin:1em 0}figcaption{color:#555;font-size:.9em}
.wide{overflow-x:auto}
.models{display:flex;flex-wrap:wrap;gap:12px}.models figure{flex:1 1 560px}
"""

_JS = """
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      var asc = !th.classList.contains('asc');
      table.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc ? 'asc' : 'desc');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(r){var c=r.cells[col]; return c.getAttribute('data-v') !== null ? c.getAttribute('data-v') : c.textContent;}
      rows.sort(function(a, b){
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var ex = x === '' || isNaN(nx) && !isNaN(ny), ey = y === '' || isNaN(ny) && !isNaN(nx);
        if (ex !== ey) return ex ? 1 : -1;
        var d = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? d : -d;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
"""


def _td(text: str, value=None) -> str:
    attr = ""
    if value is not None:
        if isinstance(value, float):
            v = "" if math.isnan(value) else f"{value:.6g}"
        else:
            v = str(value)
        attr = f' data-v="{html.escape(v)}"'
    return f"<td{attr}>{html.escape(str(text))}</td>"


def _data_uri(path: Path, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def summary_html(report: Report) -> str:
    summary = report.summary
    present = _summary_columns(summary)
    paper = report.paper
    show = list(present)
    if paper is not None:
        for ds in ("hard", "toxic"):
            if ds not in show:
                show.append(ds)
        show = [ds for ds in DATASETS if ds in show]
    head = ["model", "source"]
    for ds in show:
        t = DATASET_TITLES[ds]
        head += [f"{t} %", "95% CI", "scored", "unscored", "failed", "scored by"]
    head.append("trade-off score")
    out = ['<div class="wide"><table class="sortable"><thead><tr>'
           + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    body: list[tuple[float, str]] = []  # (trade-off score, row), to interleave with the paper
    for _, r in summary.iterrows():
        cells = [_td(r["model"]), _td("yours")]
        for ds in show:
            if ds not in present:
                cells += [_td("–", math.nan)] + [_td("")] * 5
                continue
            rate = float(r[f"{ds}_rejection_pct"])
            ci = ("–" if math.isnan(rate)
                  else f"{r[f'{ds}_ci_low_pct']:.1f}–{r[f'{ds}_ci_high_pct']:.1f}")
            by = r[f"{ds}_scored_by"]
            cells += [_td(_fmt(rate), rate), _td(ci, float(r[f"{ds}_ci_low_pct"])),
                      _td(r[f"{ds}_scored"], r[f"{ds}_scored"]),
                      _td(r[f"{ds}_unscored"], r[f"{ds}_unscored"]),
                      _td(r[f"{ds}_failed"], r[f"{ds}_failed"]),
                      _td(by if isinstance(by, str) else "–")]
        score = float(r["tradeoff_score"])
        cells.append(_td(_fmt(score), score))
        body.append((score, "<tr>" + "".join(cells) + "</tr>"))
    if paper is not None:
        for _, r in paper.iterrows():
            vals = {"hard": float(r["hard_1k_rejection_pct"]),
                    "toxic": float(r["toxic_rejection_pct"])}
            cells = [_td(r["model"] + ("*" if r["ensemble_judge"] else "")), _td("paper")]
            for ds in show:
                v = vals.get(ds, math.nan)
                cells += [_td(_fmt(v), v), _td("–", math.nan), _td(""), _td(""), _td(""),
                          _td("published")]
            score = (vals["toxic"] - vals[report.x]) if report.x in vals else math.nan
            cells.append(_td(_fmt(score), score))
            body.append((score, '<tr class="paper">' + "".join(cells) + "</tr>"))
    # Same order as the summary: highest score first, rows without one last.
    body.sort(key=lambda sr: (math.isnan(sr[0]), -sr[0] if not math.isnan(sr[0]) else 0.0))
    out += [row for _, row in body]
    out.append("</tbody></table></div>")
    return "\n".join(out)


def category_html(report: Report) -> str:
    cats = report.categories
    if cats.empty:
        return "<p>No results of your own.</p>"
    parts = []
    for ds in DATASETS:
        sub = cats[cats["dataset"] == ds]
        if sub.empty:
            continue
        names = _category_order(sub["category"])
        parts.append(f"<h3>{html.escape(DATASET_TITLES[ds])}</h3>")
        parts.append('<table class="sortable"><thead><tr><th>model</th>'
                     + "".join(f"<th>{html.escape(c)}</th>" for c in names)
                     + "</tr></thead><tbody>")
        for model in dict.fromkeys(sub["model"]):
            m = sub[sub["model"] == model].set_index("category")
            cells = [_td(model)]
            for c in names:
                if c in m.index and m.at[c, "scored"] > 0:
                    rate = float(m.at[c, "rejection_pct"])
                    cells.append(_td(f"{rate:.1f} ({m.at[c, 'refused']}/{m.at[c, 'scored']})", rate))
                else:
                    cells.append(_td("–", math.nan))
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
    return "\n".join(parts)


def report_html(report: Report, tradeoff: TradeoffFigure, model_charts: Mapping[str, Path]) -> str:
    """One page, no external references: images are embedded as data URIs."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    xname = DATASET_TITLES[report.x]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>OR-Bench report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>OR-Bench report</h1>",
        f'<p class="note">Made by orbench {html.escape(__version__)} on {when} from '
        f"{len(report.files)} result file(s). Every number is computed from those files.</p>",
        "<h2>Summary</h2>",
        f"<p>{html.escape(TRADEOFF_RULE.format(x=xname))} Click a column header to re-sort.</p>",
        f"<p>{html.escape(CI_RULE)} Rejection rate = refused / scored. <b>unscored</b>: rows "
        "with no verdict (an empty or filtered response, or a judge verdict that could not be "
        "parsed); <b>failed</b>: rows whose request or judge call failed. Neither is in the "
        "denominator. <b>scored by</b>: keyword rules (stage 4) or the named LLM judge "
        "(stage 5).</p>",
    ]
    if report.paper is not None:
        parts.append('<p class="note">Grey rows: the paper\'s published numbers, for '
                     "comparison (* = a model that was also a judge in the paper's "
                     "moderation ensemble).</p>")
    parts.append(summary_html(report))
    if report.notes:
        parts.append("<ul>" + "".join(f'<li class="warn">{html.escape(n)}</li>'
                                      for n in report.notes) + "</ul>")
    parts += [
        "<h2>Over-refusal vs. safety</h2>",
        f'<figure><img alt="trade-off figure" src="{_data_uri(tradeoff.svg, "image/svg+xml")}">',
        f"<figcaption>x: rejection rate on {html.escape(xname)}; y: rejection rate on "
        "OR-Bench-Toxic. Top-left is best. Error bars: Wilson 95% CIs.</figcaption></figure>",
        "<h2>Rejection rate per category</h2>",
        "<p>Cell: rejection % (refused / scored).</p>",
        category_html(report),
    ]
    if model_charts:
        parts.append("<h2>Per model</h2><div class=\"models\">")
        for model, path in model_charts.items():
            parts.append(f'<figure><img alt="{html.escape(model)} per category" '
                         f'src="{_data_uri(path, "image/png")}"></figure>')
        parts.append("</div>")
    if report.files:
        parts.append("<h2>Input files</h2>")
        parts.append('<table class="sortable"><thead><tr><th>file</th><th>model</th>'
                     "<th>dataset</th><th>stage</th><th>kind</th><th>judge</th>"
                     "<th>complete</th></tr></thead><tbody>")
        for f in report.files:
            done = "?" if f.complete is None else ("yes" if f.complete else "NO")
            parts.append("<tr>" + "".join(_td(v) for v in (
                f.path.name, f.model, f.dataset, f.stage, f.kind, f.judge or "–", done)) + "</tr>")
        parts.append("</tbody></table>")
    parts += [f"<script>{_JS}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- writing it all


def write_report(report: Report, output_dir: str | Path) -> dict[str, Path]:
    """Write every table, figure and the HTML page; return what was written, by name."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    written["summary_csv"] = out / "summary.csv"
    report.summary.to_csv(written["summary_csv"], index=False, float_format="%.4f")
    written["summary_md"] = out / "summary.md"
    written["summary_md"].write_text(summary_markdown(report), encoding="utf-8")
    written["categories_csv"] = out / "per_category.csv"
    report.categories.to_csv(written["categories_csv"], index=False, float_format="%.4f")
    written["categories_md"] = out / "per_category.md"
    written["categories_md"].write_text(category_markdown(report), encoding="utf-8")
    fig = plot_tradeoff(report.summary, out / "tradeoff", x=report.x, paper=report.paper)
    written["tradeoff_png"], written["tradeoff_svg"] = fig.png, fig.svg
    charts: dict[str, Path] = {}
    used: set[str] = set()
    for model in report.summary["model"]:
        name = safe_filename(str(model))
        while name in used:  # two models that clean up to the same file name
            name += "_"
        used.add(name)
        charts[str(model)] = plot_model_categories(report.categories, model,
                                                   out / "models" / f"{name}.png")
        written[f"model:{model}"] = charts[str(model)]
    written["html"] = out / "report.html"
    written["html"].write_text(report_html(report, fig, charts), encoding="utf-8")
    return written


# ---------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m orbench.report",
        description="Tables, figures and one HTML page from stage-4/stage-5 result CSVs.")
    p.add_argument("inputs", nargs="*", help="result CSV files, Inspect .eval logs, or folders holding them")
    p.add_argument("--output_dir", required=True, help="folder to write the report into")
    for ds in DATASETS:
        p.add_argument(f"--{ds}", nargs="+", action="extend", default=[], metavar="FILE",
                       help=f"result files or folders that belong to the {ds} set")
    p.add_argument("--dataset", action="append", default=[], metavar="FILE=DATASET",
                   help="set the dataset of a file (path, file name or glob); repeatable")
    p.add_argument("--prefer", choices=("judge", "keyword"), default="judge",
                   help="which verdicts to use when both exist for a model and dataset "
                        "(default: judge)")
    p.add_argument("--judge", default=None,
                   help="the check model to use when several judged the same results")
    p.add_argument("--x", choices=("hard", "safe"), default="hard",
                   help="the over-refusal set on the x axis (default: hard)")
    p.add_argument("--compare_paper", action="store_true",
                   help="add the paper's published numbers as a grey series")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        overrides: dict[str, str] = {}
        for item in args.dataset:
            key, sep, ds = item.rpartition("=")
            if not sep or not key:
                raise ReportError(f"--dataset wants FILE=DATASET, got {item!r}")
            overrides[key] = ds.strip().lower()
        inputs = list(args.inputs)
        for ds in DATASETS:
            for item in getattr(args, ds):
                overrides[item] = ds
                inputs.append(item)
        report = build_report(inputs, overrides, prefer=args.prefer, judge=args.judge,
                              x=args.x, compare_paper=args.compare_paper)
        written = write_report(report, args.output_dir)
    except ReportError as exc:
        print(f"orbench.report: error: {exc}", file=sys.stderr)
        return 2
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"{len(report.summary)} model(s); report written to {written['html']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
