"""Where a hard set came from: a Hard-1K set built (build_datasets.py --hard_from) from the
refusals of the very models then tested on it rates those models high by construction.

The trail: a stage-4 file on the hard set records its input file (`input_file` in its
.run.json); beside that set, `datasets.run.json` lists the result files the hard set was
built from (`hard.sources`, with `k`); each of those names its model in its own .run.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from orbench.report.common import ResultFile
from orbench.tables.runinfo import read_record


@dataclass(frozen=True)
class SelfBuilt:
    hard_set: Path
    k: int
    builders: tuple[str, ...]  # the models whose refusals chose the set's prompts
    tested: tuple[str, ...]  # the builders that are also tested on it here


def _set_file(f: ResultFile) -> Path | None:
    name = f.record.input_file if f.record is not None else None
    if not name:
        return None
    path = Path(str(name))
    for candidate in (path, f.path.parent / path):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _builders(set_file: Path) -> tuple[int, list[str]] | None:
    try:
        info = json.loads((set_file.parent / "datasets.run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    hard = info.get("hard") if isinstance(info, dict) else None
    if not isinstance(hard, dict) or not hard.get("sources"):
        return None
    models = []
    for src in hard["sources"]:
        path = Path(str(src))
        path = path if path.is_absolute() else set_file.parent / path
        record = read_record(path)
        models.append((record.model if record else None) or path.name.split("_merged_")[0])
    return int(info.get("k") or 0), models


def self_built_hard_sets(files: Sequence[ResultFile]) -> list[SelfBuilt]:
    """Each hard set built from the refusals of models that the inputs test on it."""
    tested: dict[Path, set[str]] = {}
    for f in files:
        if f.stage == 4 and f.dataset == "hard" and f.kind != "failed":
            set_file = _set_file(f)
            if set_file is not None:
                tested.setdefault(set_file, set()).add(f.model)
    out = []
    for set_file, models in tested.items():
        built = _builders(set_file)
        if built is None:
            continue
        k, builders = built
        overlap = tuple(m for m in dict.fromkeys(builders) if m in models)
        if overlap:
            out.append(SelfBuilt(hard_set=set_file, k=k, builders=tuple(dict.fromkeys(builders)), tested=overlap))
    return out
