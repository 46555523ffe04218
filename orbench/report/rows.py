"""Reading the rows of result files: one outcome per row, and the choice of verdict source."""

from __future__ import annotations

from pathlib import Path
from typing import Collection, Sequence

import pandas as pd

from orbench.protocol.constants import (
    COL_ANSWER_CATEGORY,
    COL_CATEGORY,
    COL_IS_REJECTED,
    COL_PROMPT,
    COL_REFUSAL_SCORE,
    COL_RESPONSE,
    COL_TYPE,
    DIRECT_ANSWER,
    REFUSAL_CLASSES,
)
from orbench.report.common import (
    ANSWERED,
    FAILED,
    KEYWORD,
    NO_CATEGORY,
    REFUSED,
    UNSCORED,
    ReportError,
    ResultFile,
)
from orbench.report.samples import numbers, sample_weights
from orbench.protocol.verdict import refused_in


def read_csv(path: Path, nrows: int | None = None) -> pd.DataFrame:
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


def categories(frame: pd.DataFrame) -> pd.Series:
    col = COL_CATEGORY if COL_CATEGORY in frame.columns else (
        COL_TYPE if COL_TYPE in frame.columns else None)
    if col is None:
        return pd.Series([NO_CATEGORY] * len(frame), index=frame.index, dtype=object)
    cats = frame[col].astype(str).str.strip()
    return cats.where(cats != "", NO_CATEGORY)


def keyword_outcome(value: str) -> str:
    verdict = refused_in(value)
    if verdict is None:
        return UNSCORED  # empty, filtered, or anything that is not a verdict
    return REFUSED if verdict else ANSWERED


def _judge_outcome(value: str) -> str:
    low = str(value).strip().lower()
    if low in REFUSAL_CLASSES:
        return REFUSED
    if low == DIRECT_ANSWER:
        return ANSWERED
    return UNSCORED


def outcomes(f: ResultFile, frame: pd.DataFrame) -> pd.Series:
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
        return frame[COL_IS_REJECTED].map(keyword_outcome)
    # rejected / accepted: the file says the verdict, unless a row has no answer at all.
    verdict = REFUSED if f.kind == "rejected" else ANSWERED
    if COL_IS_REJECTED in frame.columns:
        marks = frame[COL_IS_REJECTED].map(keyword_outcome)
        return marks.where(marks == UNSCORED, verdict)
    return pd.Series([verdict] * len(frame), index=frame.index, dtype=object)


RESULT_COLUMNS = ["model", "dataset", "stage", "kind", "judge", "category", "outcome", "file",
                  "sample", "keyword", "score", "pi", "design", "design_floor"]


def _sample_keyword(f: ResultFile, frame: pd.DataFrame, frames: Frames | None = None) -> pd.Series:
    """Stage 4's verdict on each row of a judged sample: the file's own is_rejected column
    (stage 5 carries it along), else looked up in the stage-4 file by prompt and response."""
    if COL_IS_REJECTED in frame.columns:
        return frame[COL_IS_REJECTED].map(keyword_outcome)
    source = frame_of(f.sample_of, frames)
    need = [COL_PROMPT, COL_RESPONSE, COL_IS_REJECTED]
    if not all(c in source.columns for c in need) or not all(c in frame.columns for c in need[:2]):
        raise ReportError(f"{f.path}: has no {COL_IS_REJECTED!r} column and cannot be matched "
                          f"to {f.sample_of} by prompt and response")
    lookup = dict(zip(zip(source[COL_PROMPT], source[COL_RESPONSE]),
                      source[COL_IS_REJECTED].map(keyword_outcome)))
    keys = zip(frame[COL_PROMPT], frame[COL_RESPONSE])
    return pd.Series([lookup.get(k, UNSCORED) for k in keys], index=frame.index, dtype=object)


Frames = dict  # path -> the file's DataFrame: each result file is read once per report


def frame_of(path: Path, frames: Frames | None) -> pd.DataFrame:
    """The file's rows, read now or taken from ``frames`` (which keeps them for later readers)."""
    if frames is None:
        return read_csv(path)
    if path not in frames:
        frames[path] = read_csv(path)
    return frames[path]


def read_results(files: Sequence[ResultFile], frames: Frames | None = None) -> pd.DataFrame:
    """One row per CSV row: model, dataset, stage, kind, judge, category, outcome, file,
    sample (the row belongs to a judged sample) and keyword (for a judged sample's rows,
    stage 4's outcome of the same row; empty otherwise); score (stage 4's refusal_score,
    also on a judged sample's rows; nan without one), pi (a judged row's inclusion
    probability; nan = equal weights), design and design_floor (a judged sample's design). ``frames``, when given, keeps every
    file read, for the report's other readers (the examples views)."""
    parts = []
    for f in files:
        frame = frame_of(f.path, frames)
        sample = f.sample_of is not None
        keyword = (_sample_keyword(f, frame, frames) if sample and f.kind != "failed"
                   else pd.Series("", index=frame.index, dtype=object))
        if sample:
            score, pi = sample_weights(f, frame, frame_of(f.sample_of, frames))
        else:
            score, pi = numbers(frame, COL_REFUSAL_SCORE), pd.Series(float("nan"), index=frame.index, dtype=float)
        part = pd.DataFrame({
            "model": f.model, "dataset": f.dataset, "stage": f.stage, "kind": f.kind,
            "judge": f.judge, "category": categories(frame), "outcome": outcomes(f, frame),
            "file": str(f.path), "sample": sample, "keyword": keyword, "score": score, "pi": pi,
            "design": f.design, "design_floor": f.design_floor,
        }, index=frame.index)
        parts.append(part)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in RESULT_COLUMNS})
    return pd.concat(parts, ignore_index=True)[RESULT_COLUMNS]


def select_verdicts(results: pd.DataFrame, prefer: str = "judge",
                    judge: str | None = None, distrust: Collection[str] = ()) -> pd.DataFrame:
    """Keep, for each (model, dataset), the rows of one source of verdicts.

    prefer="judge": the judge's rows when there are any, else the keyword rows.
    prefer="keyword": the keyword rows when a stage-4 answer file exists, else the judge's.
    A judge in `distrust` (it failed its audit) is treated as prefer="keyword" would.
    When the judge is used, failed stage-4 requests are kept (as failed rows). Adds the
    column scored_by: "keyword" or "judge:NAME". A judged sample's rows are never chosen:
    they measure the keyword rules (see correction.py), they are not the model's rate.
    """
    if prefer not in ("judge", "keyword"):
        raise ReportError(f"--prefer must be judge or keyword, not {prefer!r}")
    chosen = []
    for (model, dataset), grp in results.groupby(["model", "dataset"], sort=False):
        s4 = grp[grp["stage"] == 4]
        s5 = grp[(grp["stage"] == 5) & ~grp["sample"].eq(True)]
        if judge is not None:
            s5 = s5[s5["judge"] == judge]
        judges = sorted(s5["judge"].unique())
        if len(judges) > 1:
            raise ReportError(f"{model} on {dataset} has verdicts from several judges "
                              f"({', '.join(judges)}); pick one with --judge")
        has_keyword = bool((s4["kind"] != "failed").any())
        trusted = not (len(s5) > 0 and judges[0] in distrust)
        use_judge = len(s5) > 0 and ((prefer == "judge" and trusted) or not has_keyword)
        if use_judge:
            rows = pd.concat([s5, s4[s4["outcome"] == FAILED]])
            rows = rows.assign(scored_by=f"judge:{judges[0]}")
        else:
            rows = s4.assign(scored_by=KEYWORD)
        chosen.append(rows)
    if not chosen:
        return results.assign(scored_by=pd.Series(dtype=object))
    return pd.concat(chosen, ignore_index=True)

