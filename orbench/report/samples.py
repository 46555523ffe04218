"""Judged samples: which stage-4 file a stage-5 sample was drawn from, and with what design.

A stage-5 file is a judged sample when its `.run.json` (or, for a failed-calls file, the
one beside its merged file) has a `sample_size`, or when the user pairs it with
`--sample_of JUDGED=STAGE4`. Its stage-4 file is the run.json's `input_path`, else its
`input_file` taken relative to the stage-5 file's folder. That file is read even when it is
not among the inputs: the sample means nothing without it.

The design is the run.json's `sample_design` (stage 5 --design); a sample without one was
drawn uniformly (stage 5 before designs existed). Each judged row's weight is its own
`inclusion_probability`; a `score`-design file without that column is refused, never read
as a uniform sample.
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from orbench.protocol.constants import COL_INCLUSION_PROBABILITY, COL_PROMPT, COL_REFUSAL_SCORE, COL_RESPONSE
from orbench.statistics.design import DESIGNS, SCORE, UNIFORM
from orbench.report.common import ReportError, ResultFile
from orbench.tables.runinfo import RunRecord


def _explicit(path: Path, pairs: Mapping[str, str]) -> Path | None:
    resolved = path.resolve()
    for key, stage4 in pairs.items():
        kpath = Path(key)
        if (kpath.exists() and kpath.resolve() == resolved) or key == path.name \
                or fnmatch.fnmatch(path.name, key):
            return Path(stage4)
    return None


def sample_source(path: Path, run: RunRecord, pairs: Mapping[str, str]) -> Path | None:
    """The stage-4 file (resolved) that the stage-5 file at path judged a sample of.

    None when it is not a sample. A sample whose stage-4 file cannot be found is an error:
    its rows alone would read as the model's rate.
    """
    named = _explicit(path, pairs)
    if named is not None:
        if not named.is_file():
            raise ReportError(f"--sample_of {path.name}={named}: no such stage-4 file")
        return named.resolve()
    if not run.judged_sample:
        return None
    tried = []
    for candidate in (run.input_path, run.input_file):
        if not candidate:
            continue
        cpath = Path(str(candidate))
        cpath = cpath if cpath.is_absolute() else path.parent / cpath
        tried.append(str(cpath))
        if cpath.is_file():
            return cpath.resolve()
    where = " or ".join(tried) or "(its run.json names none)"
    raise ReportError(f"{path}: a judged sample of a stage-4 file that is missing: {where}; "
                      "put it back, or pair them with --sample_of JUDGED.csv=STAGE4.csv")


def adopt_stage4(files: Sequence[ResultFile]) -> list[ResultFile]:
    """Give each sample the model and dataset of the stage-4 file it was drawn from."""
    by_path = {f.path.resolve(): f for f in files if f.stage == 4}
    out = []
    for f in files:
        if f.sample_of is not None:
            src = by_path.get(f.sample_of)
            if src is None:
                raise ReportError(f"{f.path}: its stage-4 file {f.sample_of} is not a stage-4 "
                                  "result file (no is_rejected column)")
            f = replace(f, model=src.model, dataset=src.dataset)
        out.append(f)
    return out


def sample_design(run: RunRecord | None) -> tuple[str, float | None]:
    """(design name, floor) of a judged sample, from its run record."""
    design = run.sample_design if run is not None else None
    if not isinstance(design, Mapping):
        return UNIFORM, None
    name = str(design.get("name") or UNIFORM)
    floor = design.get("floor")
    return name, float(floor) if isinstance(floor, (int, float)) else None


def numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column as floats (nan where empty or not a number); all nan without the column."""
    if column not in frame.columns:
        return pd.Series(float("nan"), index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce").astype(float)


def sample_weights(f: ResultFile, frame: pd.DataFrame, source: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(refusal_score, inclusion_probability) of each row of a judged sample.

    The score is the file's own column, else the stage-4 row's (matched by prompt and
    response). The probability is the file's column; a uniform sample without it (written
    before the column existed) gets nan, which the estimator reads as equal weights.
    """
    if f.design not in DESIGNS:
        raise ReportError(f"{f.path}: its run.json names an unknown sample design {f.design!r} "
                          f"(known: {', '.join(DESIGNS)})")
    if COL_REFUSAL_SCORE in frame.columns:
        scores = numbers(frame, COL_REFUSAL_SCORE)
    elif all(c in source.columns for c in (COL_PROMPT, COL_RESPONSE, COL_REFUSAL_SCORE)):
        lookup = dict(zip(zip(source[COL_PROMPT], source[COL_RESPONSE]), numbers(source, COL_REFUSAL_SCORE)))
        scores = pd.Series([lookup.get(k, float("nan")) for k in zip(frame[COL_PROMPT], frame[COL_RESPONSE])],
                           index=frame.index, dtype=float)
    else:
        scores = pd.Series(float("nan"), index=frame.index, dtype=float)
    pi = numbers(frame, COL_INCLUSION_PROBABILITY)
    if f.design == SCORE and f.kind != "failed" and (COL_INCLUSION_PROBABILITY not in frame.columns
                                                      or bool(((pi <= 0) | (pi > 1) | pi.isna()).any())):
        raise ReportError(f"{f.path}: its run.json says the rows were drawn with --design score, but "
                          f"{COL_INCLUSION_PROBABILITY!r} is missing or not a probability on some rows; "
                          "re-run stage 5 with the same command to rewrite it")
    return scores, pi
