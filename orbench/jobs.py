"""The worker pool: run a stage's jobs concurrently, write each result the moment it arrives,
report progress.

The runner (orbench.runner) supplies a list of ``Job``s and an async
``handler(job) -> Outcome | Failed``. The pool:
- skips jobs whose keys are already in the output (resume);
- runs the rest with a bounded pool of workers;
- appends each outcome's rows (or the failed row) to disk immediately;
- stops the whole run on an EndpointError (bad key, unknown model, no quota);
- shows a tqdm bar with done/total, cache hits, failures and tokens.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from tqdm import tqdm

from .errors import FatalEndpointError
from .llm import CallFailed, LLMClient
from .resume import StageOutput
from .retry import EndpointError


@dataclass
class Job:
    key: str
    index: int
    row: dict[str, str]
    payload: Any = None


@dataclass
class Outcome:
    rows: list[dict[str, object]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)  # e.g. {"unscored": 1}


@dataclass(frozen=True)
class Failed:
    """A job that could not be done: its row goes to the failed file with this reason."""

    reason: str


@dataclass
class RunCounts:
    total: int = 0
    skipped_done: int = 0
    done: int = 0
    failed: int = 0
    counters: Counter = field(default_factory=Counter)


async def run_jobs(
    jobs: Sequence[Job],
    handler: Callable[[Job], Awaitable[Outcome | Failed]],
    output: StageOutput,
    done_keys: set[str],
    *,
    clients: Sequence[LLMClient],
    failed_row: Callable[[Job, str], dict[str, object]],
    desc: str,
    workers: int | None = None,
) -> RunCounts:
    counts = RunCounts(total=len(jobs))
    todo = [j for j in jobs if j.key not in done_keys]
    counts.skipped_done = len(jobs) - len(todo)
    if workers is None:
        # Enough workers to fill every endpoint's slots (an ensemble job holds one slot
        # on each of its endpoints at once).
        workers = max((c.concurrency * len(c.endpoint.base_urls) for c in clients), default=1)
    workers = max(1, min(workers, len(todo) or 1))
    queue = iter(todo)
    # disable=None: a bar on a terminal; none in logs and pipes, where the summary lines speak.
    bar = tqdm(total=len(jobs), initial=counts.skipped_done, desc=desc, unit="row", dynamic_ncols=True,
               mininterval=0.5, disable=None)
    last_postfix = 0.0

    def postfix(force: bool = False) -> None:
        nonlocal last_postfix
        now = time.monotonic()
        if force or now - last_postfix > 0.5:
            last_postfix = now
            cached = sum(c.stats.cached for c in clients)
            tokens = sum(c.stats.prompt_tokens + c.stats.completion_tokens for c in clients)
            bar.set_postfix(cached=cached, failed=counts.failed, tokens=tokens, refresh=False)

    async def worker() -> None:
        for job in queue:  # a shared iterator: each job is taken by exactly one worker
            try:
                outcome = await handler(job)
            except CallFailed as err:
                outcome = Failed(str(err))
            if isinstance(outcome, Failed):
                output.append_failed(failed_row(job, outcome.reason))
                counts.failed += 1
            else:
                output.append(outcome.rows)
                counts.done += 1
                counts.counters.update(outcome.counters)
            bar.update(1)
            postfix()

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    try:
        await asyncio.gather(*tasks)
    except EndpointError as err:
        bar.leave = False
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise FatalEndpointError(str(err)) from None
    except BaseException:
        bar.leave = False  # the error line alone should stay on screen
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        postfix(force=True)
        bar.close()
    return counts
