"""File names the stages derive from models and from their main output."""

from __future__ import annotations

import re
from pathlib import Path


def safe_name(name: str) -> str:
    """A model name made safe for a file name (``meta-llama/Llama-3`` -> ``meta-llama_Llama-3``)."""
    return re.sub(r"[^\w.\-]+", "_", name).strip("_") or "model"


def sibling(path: Path, token: str, replacement: str, fallback_suffix: str) -> Path:
    """The failed/split file next to an output: swap the token in its name, or add a suffix."""
    if token in path.name:
        return path.with_name(path.name.replace(token, replacement, 1))
    return path.with_name(f"{path.stem}{fallback_suffix}{path.suffix or '.csv'}")
