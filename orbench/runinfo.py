"""The small JSON file written beside each output: the run's settings and counts.

Named ``{output path without .csv}.run.json``. It never holds API keys.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import __version__
from .errors import UserError

if TYPE_CHECKING:
    from .llm import LLMClient


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


# Settings that change what a row holds. Resuming into an output written with other values
# would mix two experiments in one file, so that is refused.
RESUME_KEYS = (
    "stage", "model_id", "endpoint", "moderator_ids", "endpoints", "temperature", "max_tokens",
    "system_prompt", "rules", "refusal_weights", "template_version", "column", "num_rewrites",
)


def check_same_settings(output: Path, info: dict[str, Any]) -> None:
    """Refuse to resume into an output written with other settings (one line, exit 2)."""
    if not (output.exists() and output.stat().st_size > 0):
        return
    before = read_runinfo(output)
    if not before:
        return
    changed = [k for k in RESUME_KEYS if k in info and k in before and before[k] != info[k]]
    if changed:
        what = ", ".join(f"{k} {before[k]!r} -> {info[k]!r}" for k in changed)
        raise UserError(
            f"{output} was written with other settings ({what}); resuming would mix them. "
            f"Choose another --output_path (or --name), or move the old file away"
        )


def base_info(stage: str, args: Any, **extra: Any) -> dict[str, Any]:
    """The settings every stage records."""
    from .prompts import TEMPLATE_VERSION

    return {
        "stage": stage,
        "temperature": getattr(args, "temperature", None),
        "max_tokens": getattr(args, "max_tokens", None),
        "limit": getattr(args, "limit", None),
        "limit_seed": getattr(args, "limit_seed", None) if getattr(args, "limit", None) else None,
        "cache": not getattr(args, "no_cache", False),
        "template_version": TEMPLATE_VERSION,
        **extra,
    }


def endpoint_info(client: "LLMClient") -> dict[str, Any]:
    e = client.endpoint
    return {"model_name": e.name, "model_id": e.model, "endpoint": e.identity, "family": e.family}


def client_info(clients: "Sequence[LLMClient]") -> dict[str, Any]:
    return {
        "requests": sum(c.stats.requests for c in clients),
        "cached": sum(c.stats.cached for c in clients),
        "failed_requests": sum(c.stats.failed for c in clients),
        "prompt_tokens": sum(c.stats.prompt_tokens for c in clients),
        "completion_tokens": sum(c.stats.completion_tokens for c in clients),
    }
