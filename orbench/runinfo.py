"""The small JSON file written beside each output: the run's settings and counts.

Named ``{output path without .csv}.run.json``. It never holds API keys.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from . import __version__


def runinfo_path(output: str | os.PathLike) -> Path:
    p = Path(output)
    base = p.name[: -len(p.suffix)] if p.suffix else p.name
    return p.with_name(base + ".run.json")


def write_runinfo(output: str | os.PathLike, info: dict[str, Any]) -> Path:
    path = runinfo_path(output)
    payload = {"orbench_version": __version__, "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **info}
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_runinfo(output: str | os.PathLike) -> dict[str, Any] | None:
    try:
        return json.loads(runinfo_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
