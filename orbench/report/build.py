"""Reading the inputs and computing every table of the report, into one Report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from orbench.errors import UserError
from orbench.inspect_eval.logs import report_frame as inspect_report_frame
from orbench.inspect_eval.logs import split_inspect_inputs
from orbench.report.common import ReportError, ResultFile
from orbench.report.correction import (
    MIN_JUDGED_PER_CATEGORY,
    correction_table,
    warning_lines,
    with_category_corrections,
)
from orbench.report.examples import DEFAULT_CAP, DEFAULT_SEED, Examples, collect_examples
from orbench.report.files import scan_inputs
from orbench.report.paper import load_paper_results
from orbench.report.rates import category_table, summarize
from orbench.report.rows import read_results, select_verdicts


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
    # One row per (model, dataset) with a judged sample: see correction.correction_table.
    corrections: pd.DataFrame = field(default_factory=pd.DataFrame)
    warnings: list[str] = field(default_factory=list)  # keyword rules shown to be unreliable
    # Whether the trade-off score and figure use corrected rates (not with --prefer keyword).
    use_corrected: bool = True
    # The rows behind the rates, for reading (examples.py); None when not collected.
    examples: Examples | None = None


def load_results(inputs: Iterable[str | Path],
                 datasets: Mapping[str, str] | None = None) -> pd.DataFrame:
    """scan_inputs then read_results: every row of every result file found."""
    return read_results(scan_inputs(inputs, datasets))


def build_report(inputs: Iterable[str | Path] = (), datasets: Mapping[str, str] | None = None,
                 prefer: str = "judge", judge: str | None = None, x: str = "hard",
                 compare_paper: bool = False, samples: Mapping[str, str] | None = None,
                 examples_per_set: int = DEFAULT_CAP, examples_seed: int = DEFAULT_SEED) -> Report:
    """Read the inputs and compute every table of the report.

    samples pairs judged-sample files with their stage-4 files (see scan_inputs).
    examples_per_set caps the rows each examples view embeds per model and set (a random
    sample drawn with examples_seed); 0 embeds none.
    """
    if examples_per_set < 0:
        raise ReportError(f"--examples_per_set must be 0 or more, not {examples_per_set}")
    inputs = list(inputs)
    if not inputs and not compare_paper:
        raise ReportError("no input files: give result files or folders, or --compare_paper")
    inputs, inspect_logs = split_inspect_inputs(inputs)
    files = scan_inputs(inputs, datasets, samples) if inputs else []
    frames: dict = {}  # each file read once, for the rates and the examples views
    results = read_results(files, frames)
    notes: list[str] = []
    # Other sources of result rows (RESULT_COLUMNS) are appended to `results` here; rows that
    # are not a judged sample's may leave `sample` and `keyword` empty (only True counts).
    if inspect_logs:  # Inspect runs of our tasks (orbench/inspect_eval/logs.py)
        try:
            rows, log_notes = inspect_report_frame(inspect_logs, zip(results["model"], results["dataset"]))
        except UserError as exc:
            raise ReportError(str(exc)) from None
        results = pd.concat([results, rows], ignore_index=True)
        notes += log_notes
    selected = select_verdicts(results, prefer=prefer, judge=judge)
    corrections = correction_table(results, ["model", "dataset"], judge=judge)
    # --prefer keyword: the user trusts the keyword rules over the judge, so the judge's
    # sample does not move the headline numbers; the corrected columns stay beside them.
    use_corrected = prefer == "judge"
    summary = summarize(selected, x=x, corrections=corrections, use_corrected=use_corrected)
    categories = category_table(selected, list(summary["model"]))
    categories = with_category_corrections(categories, correction_table(
        results, ["model", "dataset", "category"], judge=judge, min_judged=MIN_JUDGED_PER_CATEGORY, plan=False))
    for f in files:
        if f.complete is False:
            notes.append(f"{f.path.name}: its run.json says the run is not complete; "
                         "its numbers may change when the run finishes.")
    for _, r in corrections.iterrows():
        if r["note"]:
            notes.append(f"{r['model']} on {r['dataset']}: a sample judged by {r['judge']}, but "
                         f"{r['note']}: no corrected rate.")
    paper = load_paper_results() if compare_paper else None
    if paper is not None and x != "hard":
        notes.append("The paper published no 80K (safe) rates, so its points are left out "
                     "of the figure when x is the safe set.")
    examples = collect_examples(files, selected, cap=examples_per_set, seed=examples_seed,
                                judge=judge, frames=frames)
    return Report(files=files, selected=selected, summary=summary, categories=categories,
                  x=x, paper=paper, notes=notes, corrections=corrections,
                  warnings=warning_lines(corrections), use_corrected=use_corrected,
                  examples=examples)
