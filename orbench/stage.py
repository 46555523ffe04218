"""The frame every model-calling stage runs in: input rows -> jobs -> concurrent calls ->
resumable output -> ordered final file -> settings/counts JSON -> one-line summary."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

import pandas as pd

from .cli import rows_exit_code
from .constants import COL_CATEGORY
from .errors import UserError
from .llm import LLMClient
from .resume import StageOutput, content_hash, keys_with_occurrence
from .runinfo import write_runinfo
from .runner import Job, Outcome, RunCounts, run_jobs
from .sampling import stratified
from .table_io import SOURCE_ATTR, read_table

# A prompt longer than this is not sent: it is recorded in the failed file with the reason.
# 100,000 characters is about 25,000 tokens, past the context of most models we target;
# sending it would only buy a 400 error (or a bill). Override with --max_prompt_chars.
MAX_PROMPT_CHARS = 100_000


def safe_name(name: str) -> str:
    """A model name made safe for a file name (``meta-llama/Llama-3`` -> ``meta-llama_Llama-3``)."""
    return re.sub(r"[^\w.\-]+", "_", name).strip("_") or "model"


def sibling(path: Path, token: str, replacement: str, fallback_suffix: str) -> Path:
    """The failed/split file next to an output: swap the token in its name, or add a suffix."""
    if token in path.name:
        return path.with_name(path.name.replace(token, replacement, 1))
    return path.with_name(f"{path.stem}{fallback_suffix}{path.suffix or '.csv'}")


def warn(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr)


@dataclass
class PreparedRows:
    rows: list[dict[str, str]]
    skipped_blank: int = 0
    source: dict[str, Any] | None = None  # a published set: the bundled or Hub copy read, with its SHA-256 (for .run.json)


def prepare_rows(df: pd.DataFrame, text_column: str, limit: int | None, seed: int = 0) -> PreparedRows:
    """Drop rows whose text is empty (counted, with a warning); with ``limit``, keep a seeded
    sample of that many rows spread over the categories (orbench.sampling.stratified), in
    input order."""
    records = df.to_dict("records")
    rows = [r for r in records if str(r.get(text_column, "")).strip() and str(r.get(text_column)).lower() != "nan"]
    skipped = len(records) - len(rows)
    if skipped:
        warn(f"skipped {skipped} row(s) with an empty {text_column!r}")
    if limit is not None and limit < len(rows):
        ids = keys_with_occurrence(content_hash([str(r.get(text_column, "")), str(r.get(COL_CATEGORY, ""))])
                                   for r in rows)
        rows = [rows[i] for i in stratified(ids, [str(r.get(COL_CATEGORY, "")) for r in rows], limit, seed)]
    return PreparedRows(rows=rows, skipped_blank=skipped)


def load_rows(path: str, required: Sequence[str], text_column: str, limit: int | None,
              aliases: dict[str, str] | None = None, seed: int = 0) -> PreparedRows:
    """Read a stage's input, give it a category column if it has none, drop the rows with an
    empty ``text_column`` and, with ``limit``, keep a stratified sample of that many (seeded
    by ``seed``). No usable row: a UserError."""
    df = read_table(path, required, aliases=aliases)
    if COL_CATEGORY not in df.columns:
        df[COL_CATEGORY] = ""
    prepared = prepare_rows(df, text_column, limit, seed)
    prepared.source = df.attrs.get(SOURCE_ATTR)
    if not prepared.rows:
        raise UserError(f"{path} has no non-empty {text_column!r} values")
    return prepared


def jobs_from_rows(rows: Sequence[dict[str, str]], key_columns: Sequence[str]) -> list[Job]:
    hashes = [content_hash([str(r.get(c, "")) for c in key_columns]) for r in rows]
    return [Job(key=k, index=i, row=r) for i, (k, r) in enumerate(zip(keys_with_occurrence(hashes), rows))]


def key_function(key_columns: Sequence[str]) -> Callable[[dict[str, str]], str]:
    return lambda row: content_hash([str(row.get(c, "")) for c in key_columns])


def too_long(text: str, limit: int) -> str | None:
    if len(text) > limit:
        return f"prompt not sent: {len(text)} characters is over the limit of {limit} (--max_prompt_chars)"
    return None


# Settings that change what a row holds. Resuming into an output written with other values
# would mix two experiments in one file, so that is refused.
RESUME_KEYS = (
    "stage", "model_id", "endpoint", "moderator_ids", "endpoints", "temperature", "max_tokens",
    "system_prompt", "rules", "refusal_weights", "template_version", "column", "num_rewrites",
)


def check_same_settings(output: Path, info: dict[str, Any]) -> None:
    from .runinfo import read_runinfo

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


@dataclass
class StageResult:
    counts: RunCounts
    rows: list[dict[str, str]]
    info: dict[str, Any] = field(default_factory=dict)


def client_info(clients: Sequence[LLMClient]) -> dict[str, Any]:
    return {
        "requests": sum(c.stats.requests for c in clients),
        "cached": sum(c.stats.cached for c in clients),
        "failed_requests": sum(c.stats.failed for c in clients),
        "prompt_tokens": sum(c.stats.prompt_tokens for c in clients),
        "completion_tokens": sum(c.stats.completion_tokens for c in clients),
    }


def execute(
    *,
    jobs: list[Job],
    handler: Callable[[Job], Awaitable[Outcome]],
    output: StageOutput,
    clients: Sequence[LLMClient],
    failed_row: Callable[[Job, str], dict[str, object]],
    info: dict[str, Any],
    desc: str,
    transform: Callable[[list[dict[str, str]]], list[dict[str, str]]] | None = None,
    workers: int | None = None,
    batch: Any = None,
    also_plan: tuple[Sequence[Job], Callable[[Job], Awaitable[Outcome]]] | None = None,
    last_round: bool = True,
) -> StageResult:
    """Run the jobs with resume, then write the ordered file and the settings JSON.

    ``last_round=False`` (a round of stage 5's --target_halfwidth before the last) keeps the
    settings JSON saying the run is not complete.

    With ``batch`` (orbench.batch.BatchOptions) the requests that the cache cannot answer go
    through a batch engine first, under the output's lock; the normal path then finishes.
    ``also_plan`` = (jobs, handler) whose requests join that batch but whose rows are not
    this output's (stage 5's judge audit, which runs from the cache afterwards)."""
    started = time.time()
    check_same_settings(output.path, info)
    done = output.open()
    try:
        if output.repaired_bytes:
            warn(f"repaired a torn last row in {output.path} ({output.repaired_bytes} bytes cut)")
        write_runinfo(output.path, {**info, "complete": False, "rows_total": len(jobs)})
        if batch is not None:
            from .batch import run_batch_phase

            todo, plan_handler = _with_extra([j for j in jobs if j.key not in done], handler, also_plan)
            info = {**info, "batch": run_batch_phase(batch, jobs=todo, handler=plan_handler, clients=clients,
                                                     output=output.path, stage=str(info.get("stage", "")))}

        async def go() -> RunCounts:
            try:
                return await run_jobs(
                    jobs, handler, output, done, clients=clients, failed_row=failed_row, desc=desc, workers=workers
                )
            finally:
                for c in clients:
                    await c.aclose()

        try:
            counts = asyncio.run(go())
        except BaseException:
            write_runinfo(output.path, {**info, "complete": False, "rows_total": len(jobs), **client_info(clients)})
            raise
        rows = output.finalize([j.key for j in jobs], transform)
        final = {
            **info,
            "complete": last_round and counts.failed == 0,
            "rows_total": len(jobs),
            "rows_done": counts.done + counts.skipped_done,
            "rows_done_before": counts.skipped_done,
            "rows_failed": counts.failed,
            "rows_written": len(rows),
            **dict(counts.counters),
            **client_info(clients),
            "seconds": round(time.time() - started, 3),
        }
        write_runinfo(output.path, final)
        return StageResult(counts=counts, rows=rows, info=final)
    finally:
        output.close()


def _with_extra(jobs: list[Job], handler: Callable[[Job], Awaitable[Outcome]],
                extra: tuple[Sequence[Job], Callable[[Job], Awaitable[Outcome]]] | None):
    """The stage's jobs plus extra ones, with one handler that sends each job to its own."""
    if not extra:
        return jobs, handler
    extra_jobs, extra_handler = extra
    theirs = {id(j) for j in extra_jobs}

    async def either(job: Job) -> Outcome:
        return await (extra_handler if id(job) in theirs else handler)(job)

    return jobs + list(extra_jobs), either


def base_info(stage: str, args: Any, **extra: Any) -> dict[str, Any]:
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


def endpoint_info(client: LLMClient) -> dict[str, Any]:
    e = client.endpoint
    return {"model_name": e.name, "model_id": e.model, "endpoint": e.identity, "family": e.family}


def print_failed_note(counts: RunCounts, failed_path: Path) -> None:
    if counts.failed:
        print(
            f"{counts.failed} row(s) failed; they are in {failed_path} with the error. "
            f"Run the same command again to retry them.",
            file=sys.stderr,
        )


def finish_run(counts: RunCounts, failed_path: Path, args: Any) -> int:
    """Say where failed rows went, and return the stage's exit code (orbench.cli's policy)."""
    print_failed_note(counts, failed_path)
    return rows_exit_code(counts.failed, args)


__all__ = [
    "MAX_PROMPT_CHARS", "Job", "Outcome", "PreparedRows", "StageResult", "base_info", "endpoint_info",
    "execute", "finish_run", "jobs_from_rows", "key_function", "load_rows", "prepare_rows", "print_failed_note",
    "safe_name", "sibling", "too_long", "warn",
]
