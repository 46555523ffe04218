"""Judged samples: which stage-4 file a stage-5 sample was drawn from.

A stage-5 file is a judged sample when its `.run.json` (or, for a failed-calls file, the
one beside its merged file) has a `sample_size`, or when the user pairs it with
`--sample_of JUDGED=STAGE4`. Its stage-4 file is the run.json's `input_path`, else its
`input_file` taken relative to the stage-5 file's folder. That file is read even when it is
not among the inputs: the sample means nothing without it.
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from orbench.report.common import ReportError, ResultFile


def _explicit(path: Path, pairs: Mapping[str, str]) -> Path | None:
    resolved = path.resolve()
    for key, stage4 in pairs.items():
        kpath = Path(key)
        if (kpath.exists() and kpath.resolve() == resolved) or key == path.name \
                or fnmatch.fnmatch(path.name, key):
            return Path(stage4)
    return None


def sample_source(path: Path, run: Mapping, pairs: Mapping[str, str]) -> Path | None:
    """The stage-4 file (resolved) that the stage-5 file at path judged a sample of.

    None when it is not a sample. A sample whose stage-4 file cannot be found is an error:
    its rows alone would read as the model's rate.
    """
    named = _explicit(path, pairs)
    if named is not None:
        if not named.is_file():
            raise ReportError(f"--sample_of {path.name}={named}: no such stage-4 file")
        return named.resolve()
    if run.get("sample_size") is None:
        return None
    tried = []
    for candidate in (run.get("input_path"), run.get("input_file")):
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
