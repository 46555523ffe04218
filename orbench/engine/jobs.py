"""The worker pool: run a stage's jobs concurrently, write each result the moment it arrives,
report progress.

The runner (orbench.run.runner) supplies a list of ``Job``s and an async
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
from typing import Any, Awaitable, Callable, Iterable, Protocol, Sequence

from ..errors import FatalEndpointError
from .llm import CallFailed, LLMClient
from .retry import EndpointError


class RowSink(Protocol):
    """Where the pool writes each result as it arrives (the runner passes a StageOutput,
    orbench.tables.resume): the engine writes rows, the tables layer owns the file."""

    def append(self, rows: Iterable[dict[str, object]]) -> None: ...

    def append_failed(self, row: dict[str, object]) -> None: ...


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


class _Progress:
    """The tqdm bar of a run: done/total, with cache hits, failures and tokens (refreshed at
    most twice a second). disable=None: a bar on a terminal; none in logs and pipes."""

    def __init__(self, total: int, initial: int, desc: str, clients: Sequence[LLMClient], counts: RunCounts) -> None:
        from tqdm import tqdm  # here, not at the top: tqdm reads its package metadata on import (--help)

        self.bar = tqdm(total=total, initial=initial, desc=desc, unit="row", dynamic_ncols=True, mininterval=0.5,
                        disable=None)
        self.clients, self.counts = clients, counts
        self.last = 0.0

    def step(self, force: bool = False) -> None:
        if not force:
            self.bar.update(1)
        now = time.monotonic()
        if force or now - self.last > 0.5:
            self.last = now
            cached = sum(c.stats.cached for c in self.clients)
            tokens = sum(c.stats.prompt_tokens + c.stats.completion_tokens for c in self.clients)
            self.bar.set_postfix(cached=cached, failed=self.counts.failed, tokens=tokens, refresh=False)

    def close(self, failed: bool) -> None:
        if failed:
            self.bar.leave = False  # the error line alone should stay on screen
        self.step(force=True)
        self.bar.close()


def worker_count(clients: Sequence[LLMClient], todo: int) -> int:
    """Enough workers to fill every endpoint's slots (an ensemble job holds one slot on each
    of its endpoints at once), and no more than there are jobs."""
    slots = max((c.concurrency * len(c.endpoint.base_urls) for c in clients), default=1)
    return max(1, min(slots, todo or 1))


async def run_jobs(
    jobs: Sequence[Job],
    handler: Callable[[Job], Awaitable[Outcome | Failed]],
    output: RowSink,
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
    queue = iter(todo)
    progress = _Progress(len(jobs), counts.skipped_done, desc, clients, counts)

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
            progress.step()

    count = max(1, min(workers, len(todo) or 1)) if workers else worker_count(clients, len(todo))
    tasks = [asyncio.create_task(worker()) for _ in range(count)]
    failed = True
    try:
        await asyncio.gather(*tasks)
        failed = False
    except EndpointError as err:
        await _cancel(tasks)
        raise FatalEndpointError(str(err)) from None
    except BaseException:
        await _cancel(tasks)
        raise
    finally:
        progress.close(failed)
    return counts


async def _cancel(tasks: Sequence[asyncio.Task]) -> None:
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
