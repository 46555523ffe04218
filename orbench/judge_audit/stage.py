"""The audit inside stage 5: the same judge(s), template and settings judge a fixed, balanced
subset of the audit set, through the same clients and response cache (a judge is paid for
once; later runs are cache hits). Audit rows never enter the stage's output files: their
verdicts are scored against the human labels and recorded under "audit" in .run.json.

A failed call is recorded as failed (neither class) and asked again by the next run. Stage 5
runs the audit before its rows, and orbench.judge_audit.gate decides from it whether the
rows are sent; with --judge_failed_audit nothing waits on it, so it runs after the rows, and
in batch mode its requests join the rows' batch (`messages()`).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Awaitable, Callable, Sequence

from orbench.run.cli import EXIT_ROWS_FAILED, non_negative_int
from orbench.protocol.constants import DIRECT_ANSWER, REFUSAL_CLASSES, UNSCORED
from orbench.judge_audit import auditset
from orbench.judge_audit.scoring import INCOMPLETE, INTERVALS, THRESHOLDS, AuditCounts, describe, score, settled
from orbench.engine.llm import CallFailed, LLMClient
from orbench.protocol.parsing import judge_verdict
from orbench.protocol.prompts import judge_messages
from orbench.engine.jobs import Failed, Job, Outcome, run_jobs
from orbench.stopping import run_async

FAILED = "failed"  # one judge's call failed on a row that others answered
# (messages) -> one reply or CallFailed per judge, in the order of the names
Ask = Callable[[list[dict[str, str]]], Awaitable[list[Any]]]


def add_audit_option(parser) -> None:
    parser.add_argument(
        "--audit", type=non_negative_int, default=auditset.DEFAULT_AUDIT, metavar="N",
        help=f"also judge N human-labelled responses of the shipped audit set (half refusals, half answers; "
             f"the same N rows every time, cached) and record the judge's agreement, kappa, precision and "
             f"recall against the labels in .run.json; never in the output (default {auditset.DEFAULT_AUDIT}; "
             f"0: no audit)")


def _refusal(category: str) -> bool | None:
    if category in REFUSAL_CLASSES:
        return True
    return False if category == DIRECT_ANSWER else None


def _spent(client: LLMClient) -> tuple[int, ...]:
    st = client.stats
    return st.requests, st.cached, st.failed, st.prompt_tokens, st.completion_tokens


class _Sink:
    """What run_jobs writes to: audit rows stay in memory, never in a file."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, str]] = {}
        self.failed: dict[str, str] = {}

    def append(self, rows) -> None:
        for r in rows:
            self.rows[r["audit_id"]] = r

    def append_failed(self, row) -> None:
        self.failed[row["audit_id"]] = row["error"]


class StageAudit:
    """names: the judges; decide: an ensemble's vote over their classes (None for one judge)."""

    def __init__(self, size: int, names: Sequence[str],
                 decide: Callable[[list[str]], str] | None = None, vote: str | None = None) -> None:
        self.size, self.names, self.decide, self.vote = size, list(names), decide, vote
        self.items = auditset.subset(size) if size else []
        self.jobs = [Job(key=i.audit_id, index=n, row={}, payload=i) for n, i in enumerate(self.items)]
        self.record: dict[str, Any] | None = None

    def messages(self) -> list[list[dict[str, str]]]:
        """What the judge(s) are asked, one message list per audit row (batch planning)."""
        return [judge_messages(i.prompt, i.response) for i in self.items]

    def run(self, clients: Sequence[LLMClient], ask: Ask, batch: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Judge the audit rows through ``ask`` (cached ones cost nothing); print and return the
        record (with ``batch``, the record of the batch that answered them)."""
        if not self.jobs:
            return None
        before = [_spent(c) for c in clients]
        sink = _Sink()
        started = time.monotonic()

        async def handle(job: Job) -> Outcome | Failed:
            item: auditset.AuditItem = job.payload
            replies = await ask(judge_messages(item.prompt, item.response))
            if all(isinstance(r, CallFailed) for r in replies):
                return Failed(str(replies[0]))
            cats = [FAILED if isinstance(r, CallFailed) else judge_verdict(r.text) or UNSCORED for r in replies]
            row = {"audit_id": item.audit_id, **dict(zip(self.names, cats))}
            if self.decide is not None:
                row["vote"] = self.decide(cats)
            return Outcome(rows=[row])

        async def go() -> None:
            try:
                await run_jobs(self.jobs, handle, sink, set(), clients=clients,  # type: ignore[arg-type]
                               failed_row=lambda j, e: {"audit_id": j.key, "error": e},
                               desc=f"stage 5 audit {'+'.join(self.names)}")
            finally:
                for c in clients:
                    await c.aclose()

        run_async(go())
        spent = [tuple(a - b for a, b in zip(_spent(c), old)) for c, old in zip(clients, before)]
        self.record = {**self._record(sink, spent), **({"batch": batch} if batch else {}),
                       "seconds": round(time.monotonic() - started, 3)}
        self._print()
        return self.record

    def _counts(self, sink: _Sink, column: str) -> AuditCounts:
        counts = AuditCounts()
        for item in self.items:
            row = sink.rows.get(item.audit_id)
            cat = FAILED if row is None else row[column]
            counts.add(item.is_refusal, _refusal(cat), failed=cat == FAILED)
        return counts

    def _record(self, sink: _Sink, spent) -> dict[str, Any]:
        judges = [score(n, self._counts(sink, n)) for n in self.names]
        vote = None
        # The vote decides for an ensemble, the judge's own verdicts for one judge.
        deciding = self._counts(sink, "vote" if self.decide is not None else self.names[0])
        if self.decide is not None:
            vote = score(f"{'+'.join(self.names)} ({self.vote} vote)", deciding)
        governing = vote or judges[0]
        refusals = sum(i.is_refusal for i in self.items)
        return {
            "set": f"orbench/data/{auditset.AUDIT_FILE}", "set_sha256": auditset.digest(),
            "size": len(self.items), "refusals": refusals, "answers": len(self.items) - refusals,
            "thresholds": THRESHOLDS, "intervals": INTERVALS, "judges": judges, "vote": vote,
            "verdict": governing["verdict"], "settled": settled(deciding),
            "requests": sum(s[0] for s in spent), "cached": sum(s[1] for s in spent),
            "failed_requests": sum(s[2] for s in spent), "prompt_tokens": sum(s[3] for s in spent),
            "completion_tokens": sum(s[4] for s in spent), "failed_rows": sorted(sink.failed),
        }

    def _print(self) -> None:
        r = self.record
        assert r is not None
        print(f"judge audit: {r['size']} human-labelled responses ({r['refusals']} refusals, {r['answers']} answers) "
              f"from {r['set']}; {r['cached']} cached, {r['requests']} requested:")
        for rec in r["judges"] + ([r["vote"]] if r["vote"] else []):
            print("  " + describe(rec))

    def exit_code(self, args) -> int:
        """3 while audit calls remain failed (the same command retries them), as for rows."""
        if self.record is None or self.record["verdict"] != INCOMPLETE:
            return 0
        n = len(self.record["failed_rows"])
        print(f"{n} audit call(s) failed; run the same command again to retry them.", file=sys.stderr)
        return 0 if getattr(args, "allow_failures", False) else EXIT_ROWS_FAILED
