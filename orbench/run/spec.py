"""What a stage is, declared: its options, input, output, requests and how replies become rows.

A stage subclasses ``StageSpec`` and fills in the parts that differ; ``orbench.run.runner``
does everything around them (arguments, reading the input, the clients and the cache,
resume, progress, failed rows, the run record, batch mode, exit codes). A spec holds no
loop, no file I/O of results and no retry: the same spec runs online, plans batch files,
and finishes offline from imported results, without knowing which.

The life of one job (one input row):
    requests(job, attempt) -> ChatRequests, or an Outcome when no call is needed
    parse(job, replies, attempt) -> Outcome (rows), Retry (ask again) or Failed (failed file)
Batch planning reads ``requests(job, 0)`` of every job that is not done yet.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, ClassVar, Sequence

from ..tables.inputs import PreparedRows, jobs_from_rows, key_function
from ..engine.jobs import Failed, Job, Outcome, RunCounts
from ..engine.llm import CallFailed, ChatRequest, LLMClient, LLMResult
from ..tables.runinfo import RunRecord

Reply = LLMResult | CallFailed
Ask = Callable[[Sequence[ChatRequest]], Awaitable[list[Reply]]]
Transform = Callable[[list[dict[str, str]]], list[dict[str, str]]]


@dataclass(frozen=True)
class Retry:
    """``parse``: the reply could not be used; ask again with the next attempt number."""


@dataclass(frozen=True)
class OutputPlan:
    """Where a stage writes and how a written row is recognised on resume."""

    path: Path
    columns: list[str]
    failed_path: Path
    failed_columns: list[str]
    key_of: Callable[[dict[str, str]], str]
    many_rows_per_key: bool = False  # stage 2: several rewrites per seed, keyed by the seed
    # Columns kept in the final file only when some row fills them (a thinking model's reasoning).
    optional_columns: tuple[str, ...] = ()


@dataclass
class RunContext:
    """What the runner hands a spec once the input is read and the clients are made."""

    args: argparse.Namespace
    rows: PreparedRows
    clients: list[LLMClient]
    names: list[str]  # the model names as given, one per client
    # Set by the runner once it has chosen the backend: answers requests made outside the
    # rows (stage 5's audit, in finish()) the way the rows' were answered.
    ask: Ask | None = None
    # Set by the runner: answers requests a stage needs before its rows (stage 5's audit,
    # which decides whether the rows are sent). Online, the cache then the endpoint; in batch
    # mode, a batch of just those requests first. Gives (ask, the batch's record or None), or
    # the message of a batch mode that stops there (--batch_export).
    first: Callable[[Sequence[ChatRequest]], "tuple[Ask, dict[str, Any] | None] | str"] | None = None
    # The clients' counts when the rows' first pass began (runner.run_rows): the run record
    # counts the rows' requests, not those made before them.
    baseline: dict[str, int] | None = None


@dataclass
class StageResult:
    counts: RunCounts
    rows: list[dict[str, str]]
    info: RunRecord = field(default_factory=RunRecord)  # the run record written


class StageSpec:
    """Base of every stage spec. Class attributes say what the stage is; methods say how a
    row's requests are built and read. ``self.args`` is the parsed command line and
    ``self.ctx`` (after ``bind``) the run's input and clients."""

    stage: ClassVar[str]  # the name in .run.json: "alignment_checker", ...
    script: ClassVar[str]  # the original's script name (its --help and usage lines)
    temperature: ClassVar[float] = 0.0
    max_tokens: ClassVar[int] = 1000
    batchable: ClassVar[bool] = True
    model_option: ClassVar[str] = "model"  # the argument naming the model(s)
    ensemble: ClassVar[bool] = False  # does it take a comma-separated list of models?
    input_option: ClassVar[str] = "input_file"
    required_columns: ClassVar[tuple[str, ...]] = ()
    aliases: ClassVar[dict[str, str]] = {}
    key_columns: ClassVar[tuple[str, ...]] = ()
    max_chars_help: ClassVar[str] = "longer texts are not sent and go to the failed file"
    # --help's exit codes: what 0 and 3 mean for this stage, in the text every stage shares;
    # a stage whose codes differ altogether sets exit_codes.
    exit_done: ClassVar[str] = "every row done"
    exit_failed: ClassVar[str] = "some rows failed"
    exit_codes: ClassVar[str | None] = None

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ctx: RunContext | None = None

    # ---- the command line

    @classmethod
    def exit_text(cls) -> str:
        return cls.exit_codes or (
            f"Exit codes: 0 {cls.exit_done}; 3 {cls.exit_failed} (in the failed file; the same command retries "
            "them; --allow_failures makes it 0); 2 a user's mistake (a missing file or column, an unknown model, a "
            "missing key) or a fatal endpoint error (a refused key, a 404, no quota, nothing answering at the URL), "
            "in one line; 130 interrupted (finished rows are kept).")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The stage's own options (the runner adds the run and batch options)."""

    def check(self) -> None:
        """Refuse option combinations that make no sense (raise UserError), before any input is read."""

    # ---- input

    def text_column(self) -> str:
        """The column a row must have text in (empty rows are skipped and counted)."""
        return self.required_columns[0]

    def required(self) -> Sequence[str]:
        return self.required_columns

    def bind(self, ctx: RunContext) -> None:
        """Called once the input is read and the clients exist."""
        self.ctx = ctx

    def jobs(self, rows: list[dict[str, str]]) -> list[Job]:
        return jobs_from_rows(rows, self.key_columns)

    # ---- output

    def output(self) -> OutputPlan:
        raise NotImplementedError

    def record(self) -> dict[str, Any]:
        """The stage's own fields of the run record (model, rules, input file...)."""
        return {}

    def io_record(self, input_file: object, blank_key: str = "skipped_blank_prompts") -> dict[str, Any]:
        """The run record's fields about the input read and the files written (the key of the
        skipped-blank count is the stage's own, as earlier records spelled it)."""
        plan = self.output()
        return {"input_file": str(input_file), "input_source": self.ctx.rows.source,  # type: ignore[union-attr]
                blank_key: self.ctx.rows.skipped_blank, "output": str(plan.path),  # type: ignore[union-attr]
                "failed_output": str(plan.failed_path)}

    def progress_label(self) -> str:
        return self.stage

    # ---- one job

    def sent_text(self, job: Job) -> str:
        """The text whose length --max_prompt_chars bounds."""
        return str(job.row.get(self.text_column(), ""))

    def requests(self, job: Job, attempt: int) -> list[ChatRequest] | Outcome:
        raise NotImplementedError

    def parse(self, job: Job, replies: list[Reply], attempt: int) -> Outcome | Retry | Failed:
        raise NotImplementedError

    def failed_row(self, job: Job, error: str) -> dict[str, object]:
        raise NotImplementedError

    # ---- the end

    def transform(self, rows: list[dict[str, str]]) -> list[dict[str, str]]:
        """The finished rows, in input order, before the final file is written."""
        return rows

    def run(self, run_rows: "RunRows") -> "StageResult | str":
        """Drive the runner's row pass: once over ``jobs()`` by default. A stage that works in
        rounds (stage 5's --target_halfwidth) calls ``run_rows(jobs, extra_info, transform,
        last_round)`` once per round and returns the last result (or a batch mode's message)."""
        return run_rows()

    def side_requests(self) -> list[ChatRequest]:
        """Requests the stage makes besides its rows' after them (stage 5's judge audit with
        --judge_failed_audit, made in finish() through ``self.ctx.ask``): batch planning sends
        them with the rows'. Requests needed before the rows go through ``self.ctx.first``."""
        return []

    def finish(self, result: StageResult) -> int | None:
        """After the final file: split files, extra files, the summary printed. May return
        an exit code of its own (3: some side request failed; the same command retries it)."""
        return None

    # ---- helpers for specs

    def request(self, messages: Sequence[dict[str, str]], *, model: int = 0, sample: int = 0,
                grammar: str | None = None) -> ChatRequest:
        """A request with the run's temperature, max_tokens and reasoning effort."""
        return ChatRequest(model, tuple(messages), float(self.args.temperature), int(self.args.max_tokens),
                           sample, grammar, getattr(self.args, "reasoning_effort", None))


# The runner's row pass, as a spec's run() sees it (orbench.run.runner.run_rows, its spec and batch
# options bound): (jobs, extra run-record fields, transform, last round) -> result or message.
RunRows = Callable[..., "StageResult | str"]


class GeneratorSpec(StageSpec):
    """A stage with no input rows that asks in rounds until it has what it needs (stage 1:
    waves of generator calls). The runner owns the output file, the lock, resume, progress
    and the record; the spec decides each round's requests and what the replies add.

    Per round: ``next_round()`` (no requests: done), then ``arrived(i, reply)`` for each reply
    as it comes (rows to append to the file at once), then ``round_done()``.
    """

    batchable = False
    input_option = ""  # no input file
    unit = "row"

    def output_path(self) -> Path:
        raise NotImplementedError

    def columns(self) -> list[str]:
        raise NotImplementedError

    def start(self, on_disk: list[dict[str, str]], cached: bool) -> None:
        """Resume from the rows an earlier run left in the file."""

    def progress(self) -> int:
        raise NotImplementedError

    def next_round(self) -> list[ChatRequest]:
        raise NotImplementedError

    def preview(self) -> list[ChatRequest]:
        """The next round's requests, without starting it (the plan printed before any call)."""
        return []

    def plan_note(self) -> str:
        """What the plan should add about later rounds."""
        return ""

    def arrived(self, index: int, reply: Reply) -> list[dict[str, str]]:
        raise NotImplementedError

    def round_done(self) -> None:
        """All of the round's replies are in."""

    def rows(self) -> list[dict[str, str]]:
        """The final file's rows."""
        raise NotImplementedError

    def shortfall(self) -> str | None:
        """Why the run stopped short of its target (None: it reached it)."""
        return None

    def record_end(self) -> dict[str, Any]:
        return {}

    def summary(self) -> str:
        return ""


def first_failure(replies: Sequence[Reply]) -> Failed | None:
    """The first failed reply, in model order, as the row's failure; None if all answered."""
    for r in replies:
        if isinstance(r, CallFailed):
            return Failed(str(r))
    return None


def keyed_by(columns: Sequence[str]) -> Callable[[dict[str, str]], str]:
    return key_function(columns)


__all__ = ["Failed", "GeneratorSpec", "Job", "OutputPlan", "Outcome", "Reply", "Retry", "RunContext", "RunRows",
           "StageResult", "StageSpec", "Transform", "first_failure", "keyed_by"]
