"""The runner's driver for generator stages (``GeneratorSpec``, stage 1): rounds of requests
until the spec has what it needs, each reply's new rows appended to the output at once.

A kill at any moment leaves whole rows on disk (a torn last row is repaired on the next
run); the final file is written atomically at the end.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from ..engine.backends import Backend, Online
from ..errors import FatalEndpointError
from ..engine.llm import CallFailed, ChatRequest
from ..tables.resume import OutputLock, RowFile, read_rows, repair_torn_tail, write_atomic
from ..engine.retry import EndpointError
from ..tables.runinfo import sent_info, stage_record, write_runinfo
from .runplan import lines_for_requests, one_line, stage_label
from .spec import GeneratorSpec
from .cli import rows_exit_code
from ..errors import warn
from ..stopping import run_async


def run_rounds(spec: GeneratorSpec, backend: Backend | None = None) -> int:
    """Run a generator spec to its end; returns the exit code."""
    assert spec.ctx is not None, "bind() first"
    client = spec.ctx.clients[0]
    path = spec.output_path()
    lock = OutputLock(path)
    lock.acquire()
    try:
        out = RowFile(path, spec.columns())
        out.check_header()
        on_disk: list[dict[str, str]] = []
        if path.exists() and path.stat().st_size > 0:
            if repair_torn_tail(path):
                warn(f"repaired a torn last row in {path}")
            on_disk = read_rows(path)[1]
        out.open()
        spec.start(on_disk, cached=client.cache is not None)
        print(generator_plan(spec), flush=True)
        record = stage_record(spec.stage, spec.args, spec.record(), sent_info([client], spec.ctx.names, spec.args))
        write_runinfo(path, record.updated(complete=False))
        started = time.time()
        try:
            _drive(spec, backend or Online(), out)
        finally:
            out.close()
        write_atomic(path, spec.columns(), spec.rows())
        short = spec.shortfall()
        stats = client.stats
        write_runinfo(path, record.updated({"complete": short is None, "rows_written": len(spec.rows())},
                                           spec.record_end(),
                                           {"cached": stats.cached, "prompt_tokens": stats.prompt_tokens,
                                            "completion_tokens": stats.completion_tokens,
                                            "reasoning_tokens": stats.reasoning_tokens,
                                            **sent_info([client], spec.ctx.names, spec.args),
                                            "seconds": round(time.time() - started, 3)}))
    finally:
        lock.release()
    print(spec.summary())
    if short is not None:
        print(short, file=sys.stderr)
        return rows_exit_code(1, spec.args)
    return 0


def generator_plan(spec: GeneratorSpec) -> str:
    """Stage 1's plan: its first round; later rounds ask only for what is still missing."""
    lines = lines_for_requests(stage_label(spec.stage), spec.ctx.clients, spec.ctx.names,  # type: ignore[union-attr]
                               spec.preview(), note=spec.plan_note())
    return one_line(lines) or f"plan: {stage_label(spec.stage)}: nothing to send (done before)"


def _drive(spec: GeneratorSpec, backend: Backend, out: RowFile) -> None:
    from tqdm import tqdm  # here, not at the top: a light --help

    client = spec.ctx.clients[0]  # type: ignore[union-attr]
    bar = tqdm(total=getattr(spec, "target", None), initial=spec.progress(), desc=spec.progress_label(),
               unit=spec.unit, dynamic_ncols=True, disable=None)

    async def one(index: int, request: ChatRequest) -> None:
        try:
            reply: Any = await backend.answer(client, request)
        except CallFailed as err:
            reply = err
        out.append(spec.arrived(index, reply))

    async def go() -> None:
        try:
            while requests := spec.next_round():
                before = spec.progress()
                await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
                spec.round_done()
                bar.update(spec.progress() - before)
                bar.set_postfix(cached=client.stats.cached, failed=client.stats.failed, refresh=False)
        finally:
            await client.aclose()

    try:
        run_async(go())
    except EndpointError as err:
        bar.leave = False
        raise FatalEndpointError(str(err)) from None
    finally:
        bar.close()
