"""The one runner: everything around a stage spec.

``run_stage(Spec, argv)`` parses the command line (the spec's options, the run options, the
batch options), reads the input (a file or the Hub), makes the clients and the cache, picks
the backend (online; or batch planning, then online or offline), runs the jobs with resume
and progress, writes failed rows, the final file and the run record, and returns the exit
code. A spec only says what its rows are and how replies become output rows.
"""

from __future__ import annotations

import functools
import sys
import textwrap
import time
from typing import Any, Awaitable, Callable, Iterable, Sequence

from ..engine.backends import Backend, Online, answer_all
from ..batch import BatchOptions, add_batch_options, batch_options, run_batch_phase
from ..batch.plan import collect
from .cli import add_run_options, make_client, make_parser, open_cache, rows_exit_code, run_cli
from ..errors import UserError, warn
from ..stopping import run_async
from ..tables.inputs import MAX_PROMPT_CHARS, PreparedRows, load_rows, too_long
from ..engine.jobs import Failed, Job, Outcome, RunCounts, run_jobs
from ..engine.llm import ChatRequest, LLMClient
from ..tables.resume import StageOutput
from ..tables.runinfo import RunRecord, check_same_settings, client_info, sent_info, stage_record, write_runinfo
from .rounds import run_rounds
from .runplan import lines_for_requests, one_line, stage_label
from .spec import Ask, GeneratorSpec, Retry, RunContext, StageResult, StageSpec, Transform


def run_stage(spec_cls: type[StageSpec], argv: Sequence[str] | None = None, doc: str | None = None,
              prog: str | None = None) -> int:
    """A stage's ``main``: one line and exit code 2 for a user's mistake, 130 on Ctrl-C.
    ``prog`` names the command in --help and errors (default: the original script's name)."""
    return run_cli(lambda a: _run(spec_cls, a, doc, prog), argv)


def build_parser(spec_cls: type[StageSpec], doc: str | None, prog: str | None = None):
    p = make_parser(prog or spec_cls.script, doc, textwrap.fill(spec_cls.exit_text(), 95))
    spec_cls.add_arguments(p)
    if spec_cls.input_option:
        p.add_argument("--max_prompt_chars", type=int, default=MAX_PROMPT_CHARS, help=spec_cls.max_chars_help)
    add_run_options(p, temperature=spec_cls.temperature, max_tokens=spec_cls.max_tokens)
    if spec_cls.batchable:
        add_batch_options(p)
    return p


def model_names(value: str, option: str, ensemble: bool) -> list[str]:
    """The model(s) of a stage: one name, or a comma-separated ensemble, each named once."""
    if not ensemble:
        return [value]
    names = [m.strip() for m in value.split(",") if m.strip()]
    if not names:
        raise UserError(f"--{option} is empty")
    if len(set(names)) != len(names):
        raise UserError(f"--{option} lists a model twice: {value}")
    return names


def _run(spec_cls: type[StageSpec], argv: Sequence[str] | None, doc: str | None, prog: str | None) -> int:
    args = build_parser(spec_cls, doc, prog).parse_args(argv)
    batch = batch_options(args) if spec_cls.batchable else None
    names = model_names(getattr(args, spec_cls.model_option), spec_cls.model_option, spec_cls.ensemble)
    spec = spec_cls(args)
    spec.check()
    rows = (load_rows(getattr(args, spec_cls.input_option), spec.required(), spec.text_column(), args.limit,
                      spec_cls.aliases, seed=args.limit_seed) if spec_cls.input_option else PreparedRows([]))
    cache = open_cache(args)
    try:
        return _run_with(spec, batch, args, rows, cache, names)
    finally:
        if cache is not None:  # every reply committed before the command returns (a next one may read them)
            cache.flush()


def _run_with(spec: StageSpec, batch: BatchOptions | None, args, rows: PreparedRows, cache, names: list[str]) -> int:
    clients = [make_client(n, args, cache) for n in names]
    spec.bind(RunContext(args=args, rows=rows, clients=clients, names=names,
                         first=functools.partial(answer_first, spec, batch)))
    if isinstance(spec, GeneratorSpec):
        return run_rounds(spec)
    result = spec.run(functools.partial(run_rows, spec, batch))
    if isinstance(result, str):  # batch mode stopped on purpose (export, cancel): say why
        print(result)
        return 0
    extra = spec.finish(result)
    plan = spec.output()
    if result.counts.failed:
        print(f"{result.counts.failed} row(s) failed; they are in {plan.failed_path} with the error. "
              f"Run the same command again to retry them.", file=sys.stderr)
    return rows_exit_code(result.counts.failed, args) or extra or 0


def handler_for(spec: StageSpec, backend: Backend, clients: Sequence[LLMClient],
                max_chars: int) -> Callable[[Job], Awaitable[Outcome | Failed]]:
    """One job's life: its requests (or an outcome needing no call), the length bound, the
    replies from the backend, the spec's reading of them, and a retry when it asks for one."""

    async def handle(job: Job) -> Outcome | Failed:
        attempt = 0
        while True:
            requests = spec.requests(job, attempt)
            if isinstance(requests, Outcome):
                return requests
            if attempt == 0:
                reason = too_long(spec.sent_text(job), max_chars)
                if reason:
                    return Failed(reason)
            outcome = spec.parse(job, await answer_all(backend, clients, requests), attempt)
            if not isinstance(outcome, Retry):
                return outcome
            attempt += 1

    return handle


def first_requests(spec: StageSpec, jobs: Iterable[Job], clients: Sequence[LLMClient],
                   max_chars: int) -> list[tuple[LLMClient, ChatRequest]]:
    """What batch planning records: each job's first round of requests (a retry that depends
    on a reply is made in the finish, once the reply is known)."""
    planned = []
    for job in jobs:
        requests = spec.requests(job, 0)
        if isinstance(requests, Outcome) or too_long(spec.sent_text(job), max_chars):
            continue
        planned.extend((clients[r.model], r) for r in requests)
    planned.extend((clients[r.model], r) for r in spec.side_requests())
    return planned


def answer_first(spec: StageSpec, batch: BatchOptions | None,
                 requests: Sequence[ChatRequest]) -> tuple[Ask, dict[str, Any] | None] | str:
    """How requests a spec needs before its rows get their replies (RunContext.first): online,
    the cache then the endpoint; in batch mode (but --batch_cancel), when the cache cannot
    answer them all, a batch phase of just these requests first (recorded in the output's
    batch sidecar, as the rows' later batches are), then its backend."""
    assert spec.ctx is not None, "bind() first"
    clients = spec.ctx.clients
    backend: Backend = Online()
    info = None
    planned = [(clients[r.model], r) for r in requests]
    if batch is not None and batch.mode != "cancel" and collect(planned).total:
        phase = run_batch_phase(batch, requests=planned, clients=clients, output=spec.output().path,
                                stage=spec.stage)
        if phase.stop is not None:
            return phase.stop
        backend, info = phase.backend, phase.info
    return functools.partial(answer_all, backend, clients), info


def run_rows(spec: StageSpec, batch: BatchOptions | None, jobs: list[Job] | None = None,
             extra_info: dict[str, Any] | None = None, transform: Transform | None = None,
             last_round: bool = True) -> StageResult | str:
    """Run the jobs (default: the spec's) with resume, then write the ordered file and the run
    record. Returns the result, or the message of a batch mode that stops before the finish.

    A spec that runs in rounds (StageSpec.run) passes each round's jobs, its fields of the run
    record and its transform; ``last_round=False`` keeps the record saying "not complete"."""
    assert spec.ctx is not None, "bind() first"
    args, clients = spec.args, spec.ctx.clients
    plan = spec.output()
    output = StageOutput(plan.path, plan.columns, plan.failed_path, plan.failed_columns, plan.key_of,
                         many_rows_per_key=plan.many_rows_per_key, optional_columns=plan.optional_columns)
    jobs = spec.jobs(spec.ctx.rows.rows) if jobs is None else jobs
    record = stage_record(spec.stage, args, spec.record(), extra_info or {}, sent_info(clients, spec.ctx.names, args))
    started = time.time()
    check_same_settings(plan.path, record)
    done = output.open()
    try:
        if output.repaired_bytes:
            warn(f"repaired a torn last row in {plan.path} ({output.repaired_bytes} bytes cut)")
        write_runinfo(plan.path, record.updated(complete=False, rows_total=len(jobs)))
        print(stage_plan(spec, [j for j in jobs if j.key not in done], len(jobs)), flush=True)
        backend: Backend = Online()
        if spec.ctx.baseline is None:  # the rows' first pass: what came before is not theirs
            spec.ctx.baseline = client_info(clients)
        if batch is not None and jobs:  # no jobs (stage 5 skipped its rows): nothing to batch
            todo = [j for j in jobs if j.key not in done]
            phase = run_batch_phase(batch, requests=first_requests(spec, todo, clients, args.max_prompt_chars),
                                    clients=clients, output=plan.path, stage=spec.stage)
            if phase.stop is not None:
                return phase.stop
            record = record.updated(batch=phase.info)
            backend = phase.backend
        spec.ctx.ask = functools.partial(answer_all, backend, clients)
        counts = _run_jobs(spec, jobs, output, done, backend, record)
        rows = output.finalize([j.key for j in jobs], transform or spec.transform)
        final = record.updated({
            "complete": last_round and counts.failed == 0,
            "rows_total": len(jobs),
            "rows_done": counts.done + counts.skipped_done,
            "rows_done_before": counts.skipped_done,
            "rows_failed": counts.failed,
            "rows_written": len(rows),
            **dict(counts.counters),
            **client_info(clients, spec.ctx.baseline),
            **sent_info(clients, spec.ctx.names, args),
            "seconds": round(time.time() - started, 3),
        })
        write_runinfo(plan.path, final)
        return StageResult(counts=counts, rows=rows, info=final)
    finally:
        output.close()


def stage_plan(spec: StageSpec, todo: list[Job], total: int) -> str:
    """The stage's plan, printed before its first call: the requests of the rows still to do
    (a reply that must be asked again, stage 2, counts as many times as it may be)."""
    assert spec.ctx is not None
    requests: list[ChatRequest] = []
    for job in todo:
        asked = spec.requests(job, 0)
        if not isinstance(asked, Outcome):
            requests.extend(asked)
    label, clients, names = stage_label(spec.stage), spec.ctx.clients, spec.ctx.names
    repeat = int(getattr(spec.args, "parse_attempts", 1) or 1)
    note = f"{total - len(todo)} of {total} rows done before" if len(todo) < total else ""
    lines = lines_for_requests(label, clients, names, requests, repeat=repeat, note=note)
    side = spec.side_requests()
    if side:
        lines += lines_for_requests(f"{label} audit", clients, names, side, note="paid once, then cached")
    return one_line(lines) or f"plan: {label}: nothing to send ({total - len(todo)} of {total} rows done before)"


def _run_jobs(spec: StageSpec, jobs: list[Job], output: StageOutput, done: set[str], backend: Backend,
              record: RunRecord) -> RunCounts:
    clients = spec.ctx.clients  # type: ignore[union-attr]
    handle = handler_for(spec, backend, clients, spec.args.max_prompt_chars)

    async def go() -> RunCounts:
        try:
            return await run_jobs(jobs, handle, output, done, clients=clients, failed_row=spec.failed_row,
                                  desc=spec.progress_label())
        finally:
            for c in clients:
                await c.aclose()

    try:
        return run_async(go())
    except BaseException:
        write_runinfo(spec.output().path, record.updated({"complete": False, "rows_total": len(jobs)},
                                                         client_info(clients, spec.ctx.baseline)))
        raise
