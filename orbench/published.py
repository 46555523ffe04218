"""The published OR-Bench-Hard-1K and OR-Bench-Toxic sets, shipped inside the package.

A stage input (or an Inspect task's input) that is one of the sets' short names is found in
this order:

1. a file of exactly that name (no extension) in the current folder, when there is one: a path
   that exists is always read as given;
2. the copy bundled in ``orbench/data/or-bench/`` (``or-bench-hard-1k``, ``or-bench-toxic``):
   offline, pinned by SHA-256, and checked against that SHA-256 on every read;
3. the Hugging Face Hub (``or-bench-80k``, which is not bundled; see orbench.hub).

``hf://datasets/bench-llm/or-bench/...`` always reads the Hub. Either way ``.run.json`` records
the copy read under ``input_source``; ``is_published`` tells from that record whether a
result came from a published set (the report marks such results).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Mapping

from .errors import UserError

DATASET = "bench-llm/or-bench"
LICENSE = "CC-BY-4.0"
DATA_DIR = Path(__file__).resolve().parent / "data" / "or-bench"

# short name -> (file in DATA_DIR, its SHA-256). A file that no longer has its SHA-256 is
# refused: results would otherwise be labelled with a set they were not measured on.
BUNDLED: dict[str, tuple[str, str]] = {
    "or-bench-hard-1k": ("or-bench-hard-1k.csv", "3e817cb652ab754a377be45150f85ea4efdff509ae33c028c03b2eb2c6eddb27"),
    "or-bench-toxic": ("or-bench-toxic.csv", "f4c52d4e1732f81be1b767ee703203a7db80067f415d8bf65f3f1b92d3fac203"),
}

# What CC-BY-4.0 asks of whoever passes the sets on: name the authors, the dataset and the licence.
ATTRIBUTION = (
    "The OR-Bench prompt sets are by Justin Cui, Wei-Lin Chiang, Ion Stoica and Cho-Jui Hsieh "
    "(\"OR-Bench: An Over-Refusal Benchmark for Large Language Models\", ICML 2025, arXiv:2405.20947), "
    f"published as the dataset {DATASET} on the Hugging Face Hub under {LICENSE} "
    "(https://creativecommons.org/licenses/by/4.0/)."
)

COPY_BUNDLED = "bundled"
COPY_HUB = "hub"


def bundled_name(spec: str | os.PathLike) -> str | None:
    """The short name of a bundled set that ``spec`` names, or None (not a short name, or a
    local file of that very name exists and wins)."""
    text = str(spec)
    if text in BUNDLED and not Path(text).exists():
        return text
    return None


def file_name(short: str) -> str:
    return BUNDLED[short][0]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def open_bundled(short: str) -> tuple[Path, dict[str, Any]]:
    """The bundled file of a set and what ``.run.json`` records about it. A missing or
    altered file is a UserError (an installation problem the user can fix)."""
    name, expected = BUNDLED[short]
    path = DATA_DIR / name
    if not path.is_file():
        raise UserError(f"the bundled copy of {short} is missing ({path}); reinstall orbench, or read the Hub's "
                        f"copy with hf://datasets/{DATASET}/{name}")
    actual = sha256_of(path)
    if actual != expected:
        raise UserError(f"the bundled copy of {short} ({path}) has been changed: its SHA-256 is {actual}, not "
                        f"{expected}; reinstall orbench, or read the Hub's copy with hf://datasets/{DATASET}/{name}")
    return path, {"copy": COPY_BUNDLED, "dataset": DATASET, "file": name, "sha256": actual,
                  "license": LICENSE, "path": str(path)}


def is_published(source: Mapping[str, Any] | None) -> bool:
    """Whether a recorded ``input_source`` is a published OR-Bench set: the bundled copy, or any
    file of the dataset read from the Hub (records written before the bundled copies count)."""
    if not isinstance(source, Mapping):
        return False
    return source.get("copy") == COPY_BUNDLED or source.get("repo") == DATASET
