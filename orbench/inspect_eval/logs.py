"""Read the Inspect logs of the OR-Bench tasks into the per-row outcomes our report uses.

    rows = read_inspect_log("logs/2025-01-01T00-00-00_or-bench-hard-1k_abc.eval").rows

One row per sample and scorer: the model, the set (safe, hard or toxic), the category, the
outcome (refused, answered, unscored or failed), who scored it (``keyword`` for our refusal
detector, ``judge:MODEL`` for the judge), the prompt and the response. A sample that ended in
an error (its model call or its judge call failed) is one ``failed`` row, counted apart and
never as a refusal or an answer, like a row of stage 4's failed file. The model is the task's
``-T name=...`` or Inspect's model name, with orbench.tables.published's label added when the task read
a published set (the ``input_source`` in the task's metadata), as for stage-4 files.

``report_frame`` lays the rows out as the report's result rows (the columns of
``orbench.report.read_results``, plus the texts), so that an Inspect run sits in the report's
tables and figure beside the stage scripts' results.

Importing this module needs no inspect_ai; reading a log does.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from orbench.tables import published
from orbench.errors import UserError

from .replies import sample_reply
from . import (
    ANSWERED,
    CATEGORY_KEY,
    DETECTOR_SCORER,
    FAILED,
    JUDGE_SCORER,
    META_JUDGE_MODEL,
    META_OUTCOME,
    META_REFUSAL_SCORE,
    META_VERDICT,
    NO_CATEGORY,
    REFUSED,
    SET_BY_TASK,
    TASK_META_NAME,
    TASK_META_SET,
    UNSCORED,
)

LOG_SUFFIX = ".eval"  # Inspect's default log format (a zip); --log-format json logs work too
KEYWORD = "keyword"  # the report's name for stage-4-style verdicts
_OUTCOMES = (REFUSED, ANSWERED, UNSCORED)


@dataclass(frozen=True)
class InspectRow:
    """One sample's outcome under one scorer."""

    model: str
    dataset: str  # safe, hard or toxic
    category: str
    outcome: str  # refused, answered, unscored or failed
    scored_by: str  # "keyword" (the refusal detector) or "judge:MODEL"
    prompt: str
    response: str
    verdict: str = ""  # the detector's verdict or the judge's class; the error for a failed sample
    reasoning: str = ""  # the target's thinking, kept apart from its response (stage 4's reasoning)
    refusal_score: float | None = None  # the detector's score, when it gives one
    sample_id: str = ""
    epoch: int = 1
    file: str = ""


@dataclass
class InspectLog:
    """One log: what ran, how it ended, and its rows."""

    path: Path
    task: str
    model: str
    dataset: str
    status: str  # Inspect's: success, started, cancelled or error
    rows: list[InspectRow] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.status == "success"


def _read(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise UserError(f"{path}: reading Inspect logs needs inspect_ai; "
                        "install it with: pip install -e '.[inspect]'") from None
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        return read_eval_log(str(path))
    except Exception as err:  # a zip or JSON that is not a log raises many kinds of error
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise UserError(f"{path}: not a readable Inspect log ({first})") from None


def _dataset(log: Any, path: Path) -> tuple[str, str]:
    """(task name, set) of an OR-Bench task's log; a UserError for any other task's."""
    task = str(log.eval.task or "")
    short = task.rsplit("/", 1)[-1]
    meta = log.eval.metadata or {}
    dataset = meta.get(TASK_META_SET) or (SET_BY_TASK[short].dataset if short in SET_BY_TASK else None)
    if dataset not in ("safe", "hard", "toxic"):
        names = ", ".join(SET_BY_TASK)
        raise UserError(f"{path}: a log of the task {task!r}, not of an OR-Bench task ({names})")
    return short, dataset


def _prompt(sample: Any) -> str:
    if isinstance(sample.input, str):
        return sample.input
    users = [m for m in sample.input if getattr(m, "role", "") == "user"]
    return users[-1].text if users else ""


def _outcome(score: Any) -> str:
    """From the score's value, which Inspect's metrics read too (and which a score edited in
    Inspect's viewer changes): 1 refused, 0 answered, NaN unscored."""
    value = score.value
    if isinstance(value, (bool, int, float)):
        value = float(value)
        if math.isnan(value):
            return UNSCORED
        return REFUSED if value >= 0.5 else ANSWERED
    told = (score.metadata or {}).get(META_OUTCOME)
    return told if told in _OUTCOMES else UNSCORED


def _judge_name(log: Any) -> str:
    """The judge's model name: as its scores recorded it, else as the run was told it (the
    judge_model argument, then the grader role), else the evaluated model (Inspect's fallback)."""
    for sample in log.samples or []:
        score = (sample.scores or {}).get(JUDGE_SCORER)
        name = score is not None and (score.metadata or {}).get(META_JUDGE_MODEL)
        if name:
            return str(name)
    told = (log.eval.task_args or {}).get("judge_model")
    if told:
        return str(told)
    role = (log.eval.model_roles or {}).get("grader")
    role = role[0] if isinstance(role, list) and role else role
    return str(getattr(role, "model", None) or log.eval.model)


def read_inspect_log(path: str | Path) -> InspectLog:
    """Every sample of one log of our tasks, as rows (see the module docstring)."""
    path = Path(path)
    log = _read(path)
    task, dataset = _dataset(log, path)
    model = str((log.eval.metadata or {}).get(TASK_META_NAME) or log.eval.model)
    if published.is_published((log.eval.metadata or {}).get("input_source")):
        model = published.result_label(model)  # as the report labels stage-4 results of a published set
    if not log.samples and (log.samples is None or log.eval.config.log_samples is False):
        raise UserError(f"{path}: the log holds no samples (was it written with --no-log-samples?)")
    result = InspectLog(path=path, task=task, model=model, dataset=dataset, status=str(log.status))
    judge = _judge_name(log)
    scored_by = {DETECTOR_SCORER: KEYWORD, JUDGE_SCORER: f"judge:{judge}"}
    scorer_names = [s.name for s in (log.eval.scorers or [])]
    # A failed sample is one row, under the detector when the run had it (as stage 4's failed file).
    failed_by = scored_by[JUDGE_SCORER] if scorer_names == [JUDGE_SCORER] else KEYWORD
    for sample in log.samples or []:
        reply = sample_reply(sample.output)  # the response as stage 4 writes it: the thinking apart
        base = dict(model=model, dataset=dataset,
                    category=str((sample.metadata or {}).get(CATEGORY_KEY) or NO_CATEGORY),
                    prompt=_prompt(sample), response=reply.reply, reasoning=reply.thinking,
                    sample_id=str(sample.id), epoch=int(sample.epoch or 1), file=str(path))
        if sample.error is not None:
            result.rows.append(InspectRow(outcome=FAILED, scored_by=failed_by, verdict=sample.error.message, **base))
            continue
        ours = {k: v for k, v in (sample.scores or {}).items() if k in scored_by}
        if not ours:
            raise UserError(f"{path}: sample {sample.id} has no OR-Bench score; score the log first "
                            f"(inspect score {path} --scorer orbench/{DETECTOR_SCORER})")
        for name, score in ours.items():
            meta = score.metadata or {}
            raw = meta.get(META_REFUSAL_SCORE)
            by = f"judge:{meta[META_JUDGE_MODEL]}" if meta.get(META_JUDGE_MODEL) else scored_by[name]
            result.rows.append(InspectRow(
                outcome=_outcome(score), scored_by=by, verdict=str(meta.get(META_VERDICT) or score.answer or ""),
                refusal_score=float(raw) if isinstance(raw, (int, float)) else None, **base))
    return result


# ---------------------------------------------------------------- for the report

REPORT_COLUMNS = ["model", "dataset", "stage", "kind", "judge", "category", "outcome", "file",
                  "prompt", "response", "verdict", "refusal_score"]


def split_inspect_inputs(inputs: Iterable[str | Path]) -> tuple[list[str | Path], list[Path]]:
    """Split report inputs into (the rest, Inspect logs): ``.eval`` files named, and those in
    named folders. A folder stays among the rest unless it holds only logs."""
    rest: list[str | Path] = []
    logs: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(path.rglob(f"*{LOG_SUFFIX}"))
            logs.extend(found)
            if not found or any(path.rglob("*.csv")):
                rest.append(item)
        elif path.suffix.lower() == LOG_SUFFIX:
            logs.append(path)
        else:
            rest.append(item)
    return rest, list(dict.fromkeys(logs))


def report_frame(paths: Sequence[str | Path],
                 taken: Iterable[tuple[str, str]] = ()) -> tuple[pd.DataFrame, list[str]]:
    """The rows of these logs as report result rows, and notes for the report.

    ``taken``: the (model, dataset) pairs the other inputs already hold; a log for one of
    them, or two logs for one pair, would count the same prompts twice, so it is refused.
    The detector's rows read as stage 4 (keyword) rows, the judge's as stage 5 rows, and a
    failed sample as a row of stage 4's failed file.
    """
    seen: dict[tuple[str, str], Path] = {}
    taken = set(taken)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for p in paths:
        log = read_inspect_log(p)
        key = (log.model, log.dataset)
        if key in taken:
            raise UserError(f"{log.path}: {log.model} on {log.dataset} is in the other inputs too; "
                            "give one, or name the Inspect run apart with -T name=...")
        if key in seen:
            raise UserError(f"several Inspect logs for {log.model} on {log.dataset}: "
                            f"{seen[key]}, {log.path}; give one")
        seen[key] = log.path
        if not log.complete:
            notes.append(f"{log.path.name}: the Inspect run's status is {log.status!r}, not 'success'; "
                         f"its numbers may change once it is finished (inspect eval-retry {log.path}).")
        for r in log.rows:
            judged = r.scored_by.startswith("judge:")
            row = asdict(r)
            row.update(stage=5 if judged and r.outcome != FAILED else 4,
                       kind="failed" if r.outcome == FAILED else "merged",
                       judge=r.scored_by.split(":", 1)[1] if judged and r.outcome != FAILED else "")
            rows.append(row)
    frame = pd.DataFrame(rows, columns=REPORT_COLUMNS) if rows else pd.DataFrame(
        {c: pd.Series(dtype=object) for c in REPORT_COLUMNS})
    return frame[REPORT_COLUMNS], notes
