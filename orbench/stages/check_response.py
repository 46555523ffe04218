"""Stage 5: an LLM judge (or an ensemble) sorts each response into direct_answer /
direct_refusal / indirect_refusal, on every row or on a random sample (uniform, or aimed at the
detector's doubt; in one round or two)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from ..agreement import pairwise
from ..cli import positive_float, positive_int
from ..constants import (
    COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_CATEGORY, COL_ERROR, COL_INCLUSION_PROBABILITY, COL_IS_REJECTED,
    COL_PROMPT, COL_REFUSAL_SCORE, COL_RESPONSE, COL_TYPE, DIRECT_ANSWER, JUDGE_CLASSES, REFUSAL_CLASSES, UNSCORED,
)
from ..design import DEFAULT_FLOOR, DESIGNS, UNIFORM
from ..errors import UserError, warn
from ..hub import input_name
from ..inputs import MAX_PROMPT_CHARS, jobs_from_rows, key_function
from ..jobs import Failed, Job, Outcome
from ..judged_sample import (
    SamplePlan, Sampler, candidates, in_rounds, members, pi_text, rounds_text, with_probabilities,
)
from ..judge_audit import gate
from ..judge_audit.stage import StageAudit, add_audit_option
from ..llm import CallFailed, ChatRequest
from ..naming import safe_name, sibling
from ..parsing import judge_verdict
from ..prompts import judge_grammar, judge_messages
from ..resume import write_atomic
from ..runinfo import endpoint_info, read_runinfo, runinfo_path, write_runinfo
from ..runner import run_stage
from ..spec import OutputPlan, Reply, RunContext, RunRows, StageResult, StageSpec
from ..summary import rejection_summary
from ..table_io import output_stem
from ..voting import VOTES, vote

COLUMNS = [COL_PROMPT, COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_RESPONSE, COL_CATEGORY]
FAILED_COLUMNS = [COL_PROMPT, COL_ERROR, COL_RESPONSE, COL_CATEGORY]
KEY_COLUMNS = (COL_PROMPT, COL_RESPONSE, COL_CATEGORY)
# Ensemble columns: the votes, then per judge its class (or unscored / failed) and its reply.
COL_REFUSAL_VOTES = "refusal_votes"
COL_ANSWER_VOTES = "answer_votes"
COL_JUDGES_VOTED = "judges_voted"
JUDGE_FAILED = "failed"  # a judge's call for this row failed; the others vote without it


def judge_columns(name: str) -> tuple[str, str]:
    return f"{name}_{COL_ANSWER_CATEGORY}", f"{name}_{COL_ANSWER_TYPE_RESPONSE}"


def is_refusal(category: str | None) -> bool | None:
    """True: a refusal class; False: direct_answer; None: no verdict (unscored, failed)."""
    if category in REFUSAL_CLASSES:
        return True
    return False if category == DIRECT_ANSWER else None


def combine(categories: Sequence[str], rule: str) -> tuple[str, int, int]:
    """The voted class of one row, with its refusal and answer votes.

    Judges without a verdict are left out of the vote. A refusal takes the refusal class
    most of its voters gave (a tie goes to direct_refusal); no decision is unscored.
    """
    verdicts = [v for v in (is_refusal(c) for c in categories) if v is not None]
    refusals, answers = sum(verdicts), len(verdicts) - sum(verdicts)
    final = vote(verdicts, rule)
    if final is None:
        return UNSCORED, refusals, answers
    if not final:
        return DIRECT_ANSWER, refusals, answers
    counts = Counter(c for c in categories if c in REFUSAL_CLASSES)
    best = max(counts.values())
    return next(c for c in JUDGE_CLASSES if counts.get(c) == best), refusals, answers


def revote(rows: list[dict[str, str]], names: Sequence[str], rule: str) -> list[dict[str, str]]:
    """Vote again from the per-judge columns: rows kept from an earlier run may have been
    voted under another --vote rule."""
    for r in rows:
        cat, yes, no = combine([r.get(judge_columns(n)[0], "") for n in names], rule)
        r.update({COL_ANSWER_CATEGORY: cat, COL_REFUSAL_VOTES: yes, COL_ANSWER_VOTES: no, COL_JUDGES_VOTED: yes + no})
    return rows


class CheckResponse(StageSpec):
    stage = "response_checker"
    script = "check_response.py"
    model_option = "check_model"
    ensemble = True
    required_columns = (COL_PROMPT, COL_RESPONSE)
    aliases = {COL_TYPE: COL_CATEGORY}
    max_chars_help = f"a longer question+response is not sent and goes to the failed file (default {MAX_PROMPT_CHARS})"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--check_model", default="local",
                       help="the judge, or a comma-separated ensemble such as gpt4,llama3,gemini-1.5 (default: local)")
        p.add_argument("--vote", default="majority", choices=VOTES,
                       help="how an ensemble decides a row; judges without a verdict sit it out (default majority)")
        p.add_argument("--input_file", required=True,
                       help="stage-4 output (or any CSV/parquet) with 'prompt' and 'response'")
        p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                       help="judge a random sample of N scored rows (all of them if there are fewer; see --design)")
        p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
        p.add_argument("--design", choices=DESIGNS, default=UNIFORM,
                       help="uniform: every scored row equally likely (default); score: rows whose refusal_score is "
                            "near 0.5 more likely, each row's chance written in inclusion_probability")
        p.add_argument("--design_floor", type=positive_float, default=DEFAULT_FLOOR, metavar="F",
                       help=f"--design score: the weight every row gets before its doubt is added (default {DEFAULT_FLOOR})")
        p.add_argument("--target_halfwidth", type=positive_float, default=None, metavar="H",
                       help="with --sample MAX: judge a pilot, then grow the sample once (same seed) to reach a 95%% "
                            "interval of ±H points on the corrected rate, at most MAX rows")
        p.add_argument("--output_path", default=None,
                       help="merged output CSV (default: ./{input stem}_response_check_merged_{check_model}.csv)")
        add_audit_option(p)
        gate.add_gate_option(p)

    def check(self) -> None:
        if self.args.sample is not None and self.args.limit is not None:
            # A sample of the first rows is not a sample of the file the report corrects.
            raise UserError("--sample and --limit cannot be used together: --sample N already bounds the work")
        if self.args.sample is None and (self.args.design != UNIFORM or self.args.target_halfwidth is not None):
            raise UserError("--design score and --target_halfwidth need --sample N (the most rows to judge)")

    def text_column(self) -> str:
        return COL_PROMPT

    # ---- the rows judged

    def bind(self, ctx: RunContext) -> None:
        super().bind(ctx)
        self.names = ctx.names
        self.is_ensemble = len(ctx.names) > 1
        self.has_keyword = COL_IS_REJECTED in ctx.rows.rows[0]
        self.has_score = COL_REFUSAL_SCORE in ctx.rows.rows[0]
        self.upstream = (read_runinfo(self.args.input_file) if ctx.rows.source is None else None) or {}
        self.all_jobs = jobs_from_rows(ctx.rows.rows, KEY_COLUMNS)
        self.sampler = None if self.args.sample is None else Sampler(
            candidates(self.all_jobs, self.has_keyword), self.args.seed, self.args.design, self.args.design_floor,
            self.upstream.get("refusal_weights"))
        self.current_pi: dict[str, float] = {}  # the round being judged: job key -> inclusion probability
        self.final_plan: SamplePlan | None = None
        self.rounds: dict[str, Any] | None = None
        decide = (lambda cats: combine(cats, self.args.vote)[0]) if self.is_ensemble else None
        self.audit = StageAudit(self.args.audit, self.names, decide, self.args.vote)
        # The audit runs first and decides whether the rows are sent (judge_audit.gate), unless
        # --judge_failed_audit: then nothing waits on it and it runs after the rows, as before.
        self.gates = bool(self.audit.jobs) and not self.args.judge_failed_audit
        self.skip: gate.Skip | None = None
        if self.sampler is not None and not self.sampler.cands:
            why = f"no row has a True/False {COL_IS_REJECTED!r}" if self.has_keyword else "no row has a response"
            warn(f"{self.args.input_file}: nothing to sample, {why}; the output will have no rows")

    @property
    def tag(self) -> str:
        return "+".join(safe_name(n) for n in self.names)

    def columns(self) -> list[str]:
        cols = COLUMNS + ([COL_IS_REJECTED] if self.has_keyword else [])
        if self.sampler is not None:  # a judged row carries its score and its inclusion probability
            cols += ([COL_REFUSAL_SCORE] if self.has_score else []) + [COL_INCLUSION_PROBABILITY]
        if self.is_ensemble:
            cols += [COL_REFUSAL_VOTES, COL_ANSWER_VOTES, COL_JUDGES_VOTED]
            cols += [c for n in self.names for c in judge_columns(n)]
        return cols

    def output(self) -> OutputPlan:
        path = (Path(self.args.output_path) if self.args.output_path
                else Path(f"{output_stem(self.args.input_file)}_response_check_merged_{self.tag}.csv"))
        failed = sibling(path, "_response_check_merged_", "_response_check_failed_", "_failed")
        return OutputPlan(path, self.columns(), failed, FAILED_COLUMNS, key_function(KEY_COLUMNS))

    def unscored_path(self) -> Path:
        return sibling(self.output().path, "_response_check_merged_", "_response_check_unscored_", "_unscored")

    def record(self) -> dict[str, Any]:
        args, clients, plan = self.args, self.ctx.clients, self.output()
        upstream = self.upstream
        local = Path(args.input_file)
        if self.is_ensemble:
            who = {"check_models": self.names, "model_id": [c.endpoint.model for c in clients],
                   "endpoint": [c.endpoint.identity for c in clients], "vote": args.vote}
        else:
            who = endpoint_info(clients[0])
        return {"check_model": args.check_model, **who, "target_model": upstream.get("model"),
                "input_file": str(args.input_file), "input_source": self.ctx.rows.source,
                "input_path": str(local.resolve()) if local.is_file() else None,
                "skipped_blank_prompts": self.ctx.rows.skipped_blank, "output": str(plan.path),
                "failed_output": str(plan.failed_path), "unscored_output": str(self.unscored_path())}

    def progress_label(self) -> str:
        return f"stage 5 {self.tag}"

    # ---- one row

    def base_row(self, job: Job) -> dict[str, object]:
        row: dict[str, object] = {COL_PROMPT: job.row[COL_PROMPT], COL_RESPONSE: job.row[COL_RESPONSE],
                                  COL_CATEGORY: job.row.get(COL_CATEGORY, "")}
        if self.has_keyword:
            row[COL_IS_REJECTED] = job.row.get(COL_IS_REJECTED, "")
        if self.sampler is not None:
            row.update({COL_REFUSAL_SCORE: job.row.get(COL_REFUSAL_SCORE, ""),
                        COL_INCLUSION_PROBABILITY: pi_text(self.current_pi[job.key])})
        return row

    def sent_text(self, job: Job) -> str:
        return job.row[COL_PROMPT] + job.row[COL_RESPONSE]

    def requests(self, job: Job, attempt: int):
        if not job.row[COL_RESPONSE].strip():
            # Nothing to judge (an empty or filtered reply in stage 4): unscored, no call.
            row = {**self.base_row(job), COL_ANSWER_CATEGORY: UNSCORED, COL_ANSWER_TYPE_RESPONSE: ""}
            if self.is_ensemble:
                row.update({COL_REFUSAL_VOTES: 0, COL_ANSWER_VOTES: 0, COL_JUDGES_VOTED: 0})
                for n in self.names:
                    row.update(dict(zip(judge_columns(n), (UNSCORED, ""))))
            return Outcome(rows=[row], counters={"unscored": 1, "empty_response": 1})
        return self.judge_requests(judge_messages(job.row[COL_PROMPT], job.row[COL_RESPONSE]))

    def parse(self, job: Job, replies: list[Reply], attempt: int):
        names = self.names
        errors = [f"{n}: {r}" for n, r in zip(names, replies) if isinstance(r, CallFailed)]
        if len(errors) == len(replies):  # no judge answered: a failed row, retried next run
            return Failed(str(replies[0]) if not self.is_ensemble else "every judge failed: " + "; ".join(errors))
        cats = [JUDGE_FAILED if isinstance(r, CallFailed) else judge_verdict(r.text) or UNSCORED for r in replies]
        row = self.base_row(job)
        if not self.is_ensemble:
            row.update({COL_ANSWER_CATEGORY: cats[0], COL_ANSWER_TYPE_RESPONSE: replies[0].text or ""})
            return Outcome(rows=[row], counters={cats[0]: 1})
        for n, c, r in zip(names, cats, replies):
            row.update(dict(zip(judge_columns(n), (c, str(r) if isinstance(r, CallFailed) else r.text or ""))))
        revote([row], names, self.args.vote)
        row[COL_ANSWER_TYPE_RESPONSE] = "; ".join(f"{n}: {c}" for n, c in zip(names, cats))
        return Outcome(rows=[row], counters={row[COL_ANSWER_CATEGORY]: 1, "judge_calls_failed": len(errors),
                                             "judge_replies_unscored": cats.count(UNSCORED)})

    def failed_row(self, job: Job, error: str) -> dict[str, object]:
        return {COL_PROMPT: job.row[COL_PROMPT], COL_ERROR: error, COL_RESPONSE: job.row[COL_RESPONSE],
                COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    # ---- the judge's audit (orbench.judge_audit): the same requests, on human-labelled rows

    def judge_requests(self, messages: list[dict[str, str]]) -> list[ChatRequest]:
        grammar = judge_grammar(int(self.args.max_tokens))  # (only endpoints that declare grammars get it)
        return [self.request(messages, model=i, grammar=grammar) for i in range(len(self.names))]

    def audit_requests(self) -> list[ChatRequest]:
        return [r for messages in self.audit.messages() for r in self.judge_requests(messages)]

    def side_requests(self) -> list[ChatRequest]:
        """The audit's requests join the rows' batch only when they come after the rows."""
        return [] if self.gates else self.audit_requests()

    def _audit_first(self) -> str | None:
        """Run the audit before the rows and decide whether they are sent (self.skip); a batch
        mode's message when it stops before the audit is answered (--batch_export)."""
        ready = self.ctx.first(self.audit_requests())
        if isinstance(ready, str):
            return ("The judge's audit comes first: a judge that fails it is not paid for the rows. " + ready
                    + "\nThe rows' requests are planned once the audit's replies are in and the judge passes.")
        ask, batch = ready
        self.audit.run(self.ctx.clients, lambda messages: ask(self.judge_requests(messages)), batch)
        self.skip = gate.decide(self.audit.record, self._rows_to_judge(), self.args.judge_failed_audit)
        return None

    def _rows_to_judge(self) -> int:
        """How many rows the run would judge (a grown sample: at most this many)."""
        return len(self.all_jobs if self.sampler is None else self.sampler.plan(self.args.sample).jobs)

    # ---- the end

    def run(self, run_rows: RunRows) -> StageResult | str:
        """The audit first (unless --judge_failed_audit); then, unless it holds them back, every
        row, or the sample in one round or (--target_halfwidth) a pilot and one extension."""
        if self.gates:
            message = self._audit_first()
            if message is not None:
                return message
        audit = {"audit": self.audit.record} if self.gates else {}
        if self.sampler is None:
            info = {"sample_size": None, "sample_seed": None, "sampled_rows": len(self.all_jobs),
                    "population_rows": len(candidates(self.all_jobs, self.has_keyword)), **audit}
            if self.skip is not None:
                return run_rows([], {**info, "judge_skipped": self.skip.record}, None, self.skip.final)
            return run_rows(self.all_jobs, info, self._transform(None, None), True)
        if self.skip is not None:  # what would have been judged, and why it was not
            plan = self.sampler.plan(self.args.sample)
            return run_rows([], {**plan.info, **audit, "judge_skipped": self.skip.record}, None, self.skip.final)
        results: list[StageResult | str] = []

        def run_round(plan: SamplePlan, keep: SamplePlan, last: bool) -> tuple[list[dict[str, str]], bool]:
            if results and isinstance(results[-1], str):  # batch mode stopped in an earlier round
                return [], False
            self.current_pi = dict(plan.pi)
            results.append(run_rows(plan.jobs, {**plan.info, **audit}, self._transform(plan, keep), last))
            last_result = results[-1]
            if isinstance(last_result, str):
                return [], False
            return last_result.rows, last_result.counts.failed == 0

        if self.args.target_halfwidth is None:
            self.final_plan = self.sampler.plan(self.args.sample)
            run_round(self.final_plan, self.final_plan, True)
        else:
            self.final_plan, self.rounds = in_rounds(self.sampler, self.args.sample, self.args.target_halfwidth,
                                                     run_round)
        return results[-1]

    def _transform(self, plan: SamplePlan | None, keep: SamplePlan | None):
        def transform(rows: list[dict[str, str]]) -> list[dict[str, str]]:
            if plan is not None:  # exactly the sample (and, before the last round, what it may grow into)
                rows = with_probabilities(members(rows, keep or plan), plan)
            return revote(rows, self.names, self.args.vote) if self.is_ensemble else rows
        return transform

    def finish(self, result: StageResult) -> int | None:
        unscored_path = self.unscored_path()
        unscored = [r for r in result.rows if r[COL_ANSWER_CATEGORY] == UNSCORED]
        if unscored:
            write_atomic(unscored_path, self.columns(), unscored)
        elif unscored_path.exists():
            unscored_path.unlink()
        if self.skip is not None:  # no row was sent: the line that says why, and the way on
            print(gate.skip_line(self.skip, str(runinfo_path(self.output().path))), file=sys.stderr)
            return self.audit.exit_code(self.args)
        print(rejection_summary(result.rows, _verdict, failed=result.counts.failed, title=self._title()))
        extra: dict[str, Any] = dict(self.rounds or {})
        if self.is_ensemble:
            extra["judge_agreement"] = self._agreement(result)
        if not self.gates:  # --judge_failed_audit: after the rows (in batch mode, from their batch)
            ask = self.ctx.ask
            extra["audit"] = self.audit.run(self.ctx.clients, lambda messages: ask(self.judge_requests(messages)))
        write_runinfo(self.output().path, result.info.updated(extra))
        if unscored:
            print(f"{len(unscored)} unscored row(s) are kept apart in {unscored_path}")
        if self.rounds is not None:
            print(rounds_text(self.rounds))
        return self.audit.exit_code(self.args)

    def _title(self) -> str:
        what = f"judge {self.tag} on {input_name(self.args.input_file)}"
        plan = self.final_plan
        if plan is not None:
            what += (f", a random sample of {plan.info['sampled_rows']} of its {plan.info['population_rows']} "
                     f"scored rows ({self.args.design} design, seed {self.args.seed}). This is the judge's rate on "
                     "the sample only; the report corrects the keyword rate of all rows with it")
        return f"{what} (refusal = direct_refusal or indirect_refusal; unscored = no verdict):"

    def _agreement(self, result: StageResult) -> list[dict[str, Any]]:
        names = self.names
        pairs = pairwise({n: [is_refusal(r.get(judge_columns(n)[0])) for r in result.rows] for n in names})
        print(f"agreement between judges (refusal vs answer, rows both scored; vote: {self.args.vote}):")
        for p in pairs:
            kappa = "n/a" if p.kappa != p.kappa else f"{p.kappa:.3f}"
            pct = "n/a" if not p.rows else f"{p.agreement_pct:.1f}%"
            print(f"  {p.first} vs {p.second}: {pct} agree over {p.rows} rows, Cohen's kappa {kappa}")
        return [p.as_dict() for p in pairs]


def _verdict(row: dict[str, str]) -> bool | None:
    return is_refusal(row.get(COL_ANSWER_CATEGORY, ""))


def main(argv: Sequence[str] | None = None, doc: str | None = None) -> int:
    return run_stage(CheckResponse, argv, doc or __doc__)


if __name__ == "__main__":
    sys.exit(main())
