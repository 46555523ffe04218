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
from orbench.report.advice import Advice, advice
from orbench.report.choice import VerdictChoice
from orbench.report.correction import (
    MIN_JUDGED_PER_CATEGORY,
    correction_table,
    with_category_corrections,
)
from orbench.report.examples import DEFAULT_CAP, DEFAULT_SEED, Examples, collect_examples
from orbench.report.files import scan_inputs
from orbench.report.judges import JudgeAudit, collect_audits
from orbench.report.paper import load_paper_results
from orbench.report.provenance import SelfBuilt, self_built_hard_sets
from orbench.report.rates import category_table, set_aside_judge_rates, summarize
from orbench.report.rows import read_results, select_verdicts
from orbench.report.languages import languages_advice
from orbench.report.thinking import thinking_advice


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
    warnings: list[str] = field(default_factory=list)  # one line per cause (advice.py)
    # Whether the trade-off score and figure may use corrected rates (not with --prefer
    # keyword); per model and set, {set}_corrected_used says whether they do.
    use_corrected: bool = True
    # The rows behind the rates, for reading (examples.py); None when not collected.
    examples: Examples | None = None
    # What each judge's audit found (judges.py), and whose verdicts count (choice.py).
    judges: dict[str, JudgeAudit] = field(default_factory=dict)
    choice: VerdictChoice = field(default_factory=lambda: VerdictChoice(None))
    advice: list[Advice] = field(default_factory=list)
    self_built: list[SelfBuilt] = field(default_factory=list)  # hard sets built from the tested models


def load_results(inputs: Iterable[str | Path],
                 datasets: Mapping[str, str] | None = None) -> pd.DataFrame:
    """scan_inputs then read_results: every row of every result file found."""
    return read_results(scan_inputs(inputs, datasets))


def _corrections(results: pd.DataFrame, judge: str | None, choice: VerdictChoice) -> pd.DataFrame:
    """The corrected rates, each with its judge's audit status and whether it is used: a judge
    that failed its audit (or --prefer keyword) leaves the headline numbers alone, and its
    corrected columns stay beside them, marked."""
    corrections = correction_table(results, ["model", "dataset"], judge=judge)
    return corrections.assign(
        judge_audit=[choice.audits[j].status if j in choice.audits else "" for j in corrections["judge"]],
        corrected_used=[choice.uses_correction(j) for j in corrections["judge"]])


def _file_notes(files: Iterable[ResultFile], corrections: pd.DataFrame) -> list[str]:
    """Runs still unfinished, and judged samples that give no corrected rate."""
    notes = [f"{f.path.name}: its run.json says the run is not complete; its numbers may change when "
             "the run finishes." for f in files if f.complete is False]
    return notes + [f"{r['model']} on {r['dataset']}: a sample judged by {r['judge']}, but {r['note']}: "
                    "no corrected rate." for _, r in corrections.iterrows() if r["note"]]


def build_report(inputs: Iterable[str | Path] = (), datasets: Mapping[str, str] | None = None,
                 prefer: str | None = None, judge: str | None = None, x: str | None = None,
                 compare_paper: bool = False, samples: Mapping[str, str] | None = None,
                 examples_per_set: int = DEFAULT_CAP, examples_seed: int = DEFAULT_SEED) -> Report:
    """Read the inputs and compute every table of the report.

    samples pairs judged-sample files with their stage-4 files (see scan_inputs).
    prefer None: whose verdicts count follows from the judges' audits (choice.py); "judge" or
    "keyword" overrides that. x None: the hard set when there are hard-set results, else the
    safe set.
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
    audits = collect_audits(files)
    choice = VerdictChoice(prefer, audits)
    if x is None:
        x = "hard" if (results["dataset"] == "hard").any() or results.empty else "safe"
        if x == "safe":
            notes.append("No hard-set results: the figure's x axis is the 80K (safe) set.")
    selected = select_verdicts(results, prefer=choice.select_prefer, judge=judge, distrust=choice.distrusted)
    corrections = _corrections(results, judge, choice)
    use_corrected = choice.prefer != "keyword"
    summary = summarize(selected, x=x, corrections=corrections, use_corrected=use_corrected)
    summary = set_aside_judge_rates(summary, results, selected, choice.distrusted)
    categories = category_table(selected, list(summary["model"]))
    categories = with_category_corrections(categories, correction_table(
        results, ["model", "dataset", "category"], judge=judge, min_judged=MIN_JUDGED_PER_CATEGORY, plan=False))
    notes += _file_notes(files, corrections)
    paper = load_paper_results() if compare_paper else None
    if paper is not None and x != "hard":
        notes.append("The paper published no 80K (safe) rates, so its points are left out "
                     "of the figure when x is the safe set.")
    examples = collect_examples(files, selected, cap=examples_per_set, seed=examples_seed,
                                judge=judge, frames=frames)
    self_built = self_built_hard_sets(files)
    told = (advice(files, audits, choice, corrections, self_built) + thinking_advice(files, frames)
            + languages_advice(files, frames))
    return Report(files=files, selected=selected, summary=summary, categories=categories,
                  x=x, paper=paper, notes=notes, corrections=corrections,
                  warnings=[a.text for a in told], use_corrected=use_corrected,
                  examples=examples, judges=audits, choice=choice, advice=told, self_built=self_built)
