"""Stage 5 of OR-Bench: an LLM judge labels each response an answer or a refusal.

In:  --input_file: a stage-4 merged file (or any CSV/parquet with `prompt` and `response`;
     `category` and stage 4's `is_rejected` carried along).
Out: ./{input stem}_response_check_merged_{check_model}.csv with columns
     prompt, answer_category, answer_type_response, response, category
     (+ is_rejected, stage 4's keyword verdict, when the input has it; + judge_reasoning, a
     thinking judge's thinking, when it showed some).
     answer_category is direct_answer, direct_refusal, indirect_refusal, or `unscored` when
     the judge's verdict (the last [[...]] in its reply, never in its thinking) cannot be
     read, the judge was cut inside its thinking, or the response is empty (stage 4's empty,
     filtered and cut_in_thinking rows: no call is sent). Unscored rows are never counted as
     refusals; they are also copied to ..._response_check_unscored_{check_model}.csv. Failed requests go to
     ..._response_check_failed_{check_model}.csv. Settings and counts: .run.json beside it.
At the end it prints the rejection rate per category (refusal = direct_refusal or
indirect_refusal), with the counts of scored, unscored and failed rows.
Defaults: --check_model=local (or --model), temperature 0, max_tokens 1000. On an endpoint held to the format by
a grammar (the embedded model), the judge's reason is cut short enough that its verdict fits
within --max_tokens (below 150 tokens: about 3 characters of reason per token).

A judged sample (--sample N --seed S; --sample_seed is the same as --seed): judges a random sample of N of the input's scored rows
(stage 4 said True or False; without that column, rows with a response), all of them when
there are fewer. The same N, S and input give the same rows, also after a resume, and a
larger N keeps the rows already judged. --design uniform (default): every row equally likely;
--design score: rows whose refusal_score is near 0.5 more likely (--design_floor F, default
0.5, keeps every row's chance above zero; N is the expected size). Each judged row carries
refusal_score and inclusion_probability. The printed rate is then the judge's rate on the
sample only; `python -m orbench.report` uses the sample to correct the rate of every row,
with a 95% interval. The .run.json records sample_size, sample_seed, population_rows,
sampled_rows, sample_design, input_file and input_path (the stage-4 file read).
--target_halfwidth H with --sample MAX: a pilot of 100 rows, then (if its corrected rate's
interval is wider than ±H points) one extension, same seed, to the size the pilot says H
needs, at most MAX; it prints which way it stopped, and .run.json records the rounds.

An ensemble (--check_model=a,b,c --vote majority|unanimous|any): every judge sees every row.
Extra columns: refusal_votes, answer_votes, judges_voted (the judges behind the vote), and per
judge {judge}_answer_category (its class, unscored, or failed) and
{judge}_answer_type_response (its reply or error). A judge that is unscored or failed on a
row sits that row's vote out; a row where every judge failed is a failed row. The voted
refusal takes the refusal class most of its voters gave. Pairwise agreement (%) and Cohen's
kappa between judges are printed and written to the .run.json (judge_agreement).
Output file name: {input stem}_response_check_merged_{a+b+c}.csv.

The judge audit (--audit N, default 100; 0: none) comes first: the same judge(s), template and
settings judge N human-labelled responses shipped with the package (orbench/data/judge_audit.csv,
half refusals, half answers; the same N rows every time, through the response cache, so a judge
is paid for once). Agreement, kappa, precision and recall for refusals (95% intervals), rows
scored, unscored and failed, and the verdict (passed: kappa >= 0.6 and agreement >= 80%) are
printed and written to the .run.json under "audit", per judge and for an ensemble's vote. Audit
rows never enter the output.
The audit gates the rows. A judge (or an ensemble's vote) that fails is not sent them: one line
says so with the audit's figures, the output holds only its header, and the .run.json records
why under "judge_skipped"; the report then uses the keyword rates and says why nothing was
judged. --judge_failed_audit sends the rows anyway (the audit then runs after them). A failed
audit call is retried by the next run; while the calls that failed could still change the
verdict, the rows wait (exit 3). --audit 0: no audit, nothing gated.

Batch mode: --batch sends what the cache cannot answer through the endpoint's Batch API and
finishes from the cache; --batch_export DIR / --batch_import FILE... do the same through
`vllm run-batch` (docs/batch.md). The audit's requests go in a batch of their own first,
and the rows' batch follows only for a judge that passes (with --judge_failed_audit, one batch
holds both): a judge's audit is batched once, then cached.

Examples (from response_checker/; installed: orbench judge --model=gpt4 --input_file=...):
  python check_response.py --check_model=gpt4 --input_file=../alignment_checker/final_gpt4_results/gpt4_merged_or-bench-hard-1k.csv
  python check_response.py --check_model=gpt4 --sample 200 --seed 1 --input_file=../alignment_checker/final_gpt4_results/gpt4_merged_or-bench-80k.csv
  python check_response.py --check_model=gpt4 --sample 1000 --target_halfwidth 3 --input_file=../alignment_checker/final_gpt4_results/gpt4_merged_or-bench-80k.csv
  python check_response.py --check_model=gpt4,llama3,gemini-1.5 --vote majority --input_file=...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..run.cli import positive_float, positive_int
from ..protocol.constants import (
    COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_CATEGORY, COL_ERROR, COL_INCLUSION_PROBABILITY, COL_IS_REJECTED,
    COL_PROMPT, COL_REFUSAL_SCORE, COL_RESPONSE, COL_TYPE, UNSCORED,
)
from ..statistics.design import DEFAULT_FLOOR, DESIGNS, UNIFORM
from ..errors import UserError, warn
from ..tables.hub import input_name
from ..tables.inputs import MAX_PROMPT_CHARS, jobs_from_rows, key_function
from ..engine.jobs import Failed, Job, Outcome
from ..statistics.judged_sample import (
    SamplePlan, Sampler, candidates, in_rounds, members, pi_text, rounds_text, with_probabilities,
)
from ..judge_audit import gate
from ..judge_audit.stage import StageAudit, add_audit_option
from ..engine.llm import CallFailed, ChatRequest
from ..tables.naming import safe_name, sibling
from ..protocol.prompts import judge_grammar, judge_messages
from ..tables.resume import present_columns, write_atomic
from ..tables.runinfo import endpoint_info, read_runinfo, runinfo_path, write_runinfo
from ..run.runner import run_stage
from ..run.spec import OutputPlan, Reply, RunContext, RunRows, StageResult, StageSpec
from ..protocol.summary import rejection_summary
from ..tables.table_io import output_stem
from ..protocol.voting import VOTES
from ..protocol.verdict import Verdict, VerdictKind
from .judge_votes import (  # noqa: F401 (the ensemble's names, also imported from here)
    COL_ANSWER_VOTES, COL_JUDGES_VOTED, COL_REFUSAL_VOTES, JUDGE_FAILED, agreement, combine, is_refusal, judge_columns,
    read_judges, reasoning_columns, revote,
)

COLUMNS = [COL_PROMPT, COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_RESPONSE, COL_CATEGORY]
FAILED_COLUMNS = [COL_PROMPT, COL_ERROR, COL_RESPONSE, COL_CATEGORY]
KEY_COLUMNS = (COL_PROMPT, COL_RESPONSE, COL_CATEGORY)
CUT_CELL = Verdict(VerdictKind.CUT_IN_THINKING).to_csv()


class CheckResponse(StageSpec):
    stage = "response_checker"
    script = "check_response.py"
    model_option = "check_model"
    ensemble = True
    exit_done = "every row done, or none sent because the judge failed its audit"
    exit_failed = "some rows (or audit calls) failed"
    required_columns = (COL_PROMPT, COL_RESPONSE)
    aliases = {COL_TYPE: COL_CATEGORY}
    max_chars_help = f"a longer question+response is not sent and goes to the failed file (default {MAX_PROMPT_CHARS})"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--check_model", "--model", dest="check_model", default="local",
                       help="the judge (a registry name, PROVIDER/MODEL or a model id), or a comma-separated ensemble such "
                            "as gpt4,llama3,gemini-1.5 (default: local)")
        p.add_argument("--vote", default="majority", choices=VOTES,
                       help="how an ensemble decides a row; judges without a verdict sit it out (default majority)")
        p.add_argument("--input_file", required=True,
                       help="stage-4 output (or any CSV/parquet) with 'prompt' and 'response'")
        p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                       help="judge a random sample of N scored rows (all of them if there are fewer; see --design)")
        p.add_argument("--seed", "--sample_seed", dest="seed", type=int, default=0, help="the sample's seed (default 0)")
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
        return cols + reasoning_columns(self.names)

    def output(self) -> OutputPlan:
        path = (Path(self.args.output_path) if self.args.output_path
                else Path(f"{output_stem(self.args.input_file)}_response_check_merged_{self.tag}.csv"))
        failed = sibling(path, "_response_check_merged_", "_response_check_failed_", "_failed")
        return OutputPlan(path, self.columns(), failed, FAILED_COLUMNS, key_function(KEY_COLUMNS),
                          optional_columns=tuple(reasoning_columns(self.names)))

    def unscored_path(self) -> Path:
        return sibling(self.output().path, "_response_check_merged_", "_response_check_unscored_", "_unscored")

    def record(self) -> dict[str, Any]:
        args, clients, plan = self.args, self.ctx.clients, self.output()
        upstream = self.upstream
        local = Path(args.input_file)
        if self.is_ensemble:
            who = {"check_models": self.names, "model_id": [c.endpoint.model for c in clients],
                   "provider": [c.endpoint.provider for c in clients],
                   "endpoint": [c.endpoint.identity for c in clients], "vote": args.vote}
        else:
            who = endpoint_info(clients[0])
        return {"check_model": args.check_model, **who, "target_model": upstream.get("model"),
                "target_provider": upstream.get("provider"), "target_endpoint": upstream.get("endpoint"),
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
            why = "cut_in_thinking" if job.row.get(COL_IS_REJECTED) == CUT_CELL else "empty_response"
            return Outcome(rows=[row], counters={"unscored": 1, why: 1})
        return self.judge_requests(judge_messages(job.row[COL_PROMPT], job.row[COL_RESPONSE]))

    def parse(self, job: Job, replies: list[Reply], attempt: int):
        names = self.names
        errors = [f"{n}: {r}" for n, r in zip(names, replies) if isinstance(r, CallFailed)]
        if len(errors) == len(replies):  # no judge answered: a failed row, retried next run
            return Failed(str(replies[0]) if not self.is_ensemble else "every judge failed: " + "; ".join(errors))
        cats, thinking, counters = read_judges(replies, names)
        row = {**self.base_row(job), **thinking}
        if not self.is_ensemble:
            row.update({COL_ANSWER_CATEGORY: cats[0], COL_ANSWER_TYPE_RESPONSE: replies[0].text or ""})
            return Outcome(rows=[row], counters={cats[0]: 1, **counters})
        for n, c, r in zip(names, cats, replies):
            row.update(dict(zip(judge_columns(n), (c, str(r) if isinstance(r, CallFailed) else r.text or ""))))
        revote([row], names, self.args.vote)
        row[COL_ANSWER_TYPE_RESPONSE] = "; ".join(f"{n}: {c}" for n, c in zip(names, cats))
        return Outcome(rows=[row], counters={row[COL_ANSWER_CATEGORY]: 1, "judge_calls_failed": len(errors),
                                             "judge_replies_unscored": cats.count(UNSCORED), **counters})

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
            write_atomic(unscored_path, present_columns(self.columns(), reasoning_columns(self.names), result.rows),
                         unscored)
        elif unscored_path.exists():
            unscored_path.unlink()
        if self.skip is not None:  # no row was sent: the line that says why, and the way on
            print(gate.skip_line(self.skip, str(runinfo_path(self.output().path))), file=sys.stderr)
            return self.audit.exit_code(self.args)
        print(rejection_summary(result.rows, _verdict, failed=result.counts.failed, title=self._title()))
        extra: dict[str, Any] = dict(self.rounds or {})
        if self.is_ensemble:
            extra["judge_agreement"] = agreement(result.rows, self.names, self.args.vote)
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


def _verdict(row: dict[str, str]) -> bool | None:
    return is_refusal(row.get(COL_ANSWER_CATEGORY, ""))


def main(argv: Sequence[str] | None = None, doc: str | None = None, prog: str | None = None) -> int:
    return run_stage(CheckResponse, argv, doc or __doc__, prog)


if __name__ == "__main__":
    sys.exit(main())
