"""Stage 5: an LLM judge (or an ensemble) sorts each response into direct_answer /
direct_refusal / indirect_refusal, on every row or on a random sample (uniform, or aimed at the
detector's doubt; in one round or two)."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Sequence

from ..agreement import pairwise
from ..batch import add_batch_options, batch_options
from ..cli import add_run_options, make_client, make_parser, open_cache, positive_float, positive_int, run_cli
from ..constants import (
    COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_CATEGORY, COL_ERROR, COL_INCLUSION_PROBABILITY, COL_IS_REJECTED,
    COL_PROMPT, COL_REFUSAL_SCORE, COL_RESPONSE, COL_TYPE, DIRECT_ANSWER, JUDGE_CLASSES, REFUSAL_CLASSES, UNSCORED,
)
from ..errors import UserError
from ..llm import CallFailed, LLMClient, LLMResult
from ..parsing import judge_verdict
from ..prompts import judge_grammar, judge_messages
from ..resume import StageOutput, write_atomic
from ..runinfo import read_runinfo, write_runinfo
from ..runner import Job, Outcome
from ..design import DEFAULT_FLOOR, DESIGNS, UNIFORM
from ..judged_sample import (
    SamplePlan, Sampler, candidates, in_rounds, members, pi_text, rounds_text, with_probabilities,
)
from ..stage import (
    MAX_PROMPT_CHARS, base_info, endpoint_info, execute, jobs_from_rows, key_function, load_rows,
    finish_run, safe_name, sibling, too_long, warn,
)
from ..summary import rejection_summary
from ..table_io import output_stem
from ..hub import input_name
from ..judge_audit.stage import StageAudit, add_audit_option
from ..voting import VOTES, vote

COLUMNS = [COL_PROMPT, COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_RESPONSE, COL_CATEGORY]
FAILED_COLUMNS = [COL_PROMPT, COL_ERROR, COL_RESPONSE, COL_CATEGORY]
KEY_COLUMNS = [COL_PROMPT, COL_RESPONSE, COL_CATEGORY]
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


def build_parser(doc: str | None):
    p = make_parser("check_response.py", doc)
    p.add_argument("--check_model", default="local",
                   help="the judge, or a comma-separated ensemble such as gpt4,llama3,gemini-1.5 (default: local)")
    p.add_argument("--vote", default="majority", choices=VOTES,
                   help="how an ensemble decides a row; judges without a verdict sit it out (default majority)")
    p.add_argument("--input_file", required=True, help="stage-4 output (or any CSV/parquet) with 'prompt' and 'response'")
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
    p.add_argument("--max_prompt_chars", type=int, default=MAX_PROMPT_CHARS,
                   help="a longer question+response is not sent (failed file)")
    add_audit_option(p)
    add_run_options(p, temperature=0.0, max_tokens=1000)
    add_batch_options(p)
    return p


async def ask_all(clients: Sequence[LLMClient], messages, args) -> list[LLMResult | CallFailed]:
    """Every judge at once; a judge whose call fails gives its error instead of a reply."""
    async def one(c: LLMClient) -> LLMResult | CallFailed:
        try:
            return await c.complete(messages, temperature=args.temperature, max_tokens=args.max_tokens,
                                    grammar=judge_grammar())
        except CallFailed as err:
            return err
    return list(await asyncio.gather(*(one(c) for c in clients)))


def _main(argv: Sequence[str] | None, doc: str | None) -> int:
    args = build_parser(doc).parse_args(argv)
    batch = batch_options(args)
    names = [m.strip() for m in args.check_model.split(",") if m.strip()]
    if not names:
        raise UserError("--check_model is empty")
    if len(set(names)) != len(names):
        raise UserError(f"--check_model lists a model twice: {args.check_model}")
    if args.sample is not None and args.limit is not None:
        # A sample of the first rows is not a sample of the file the report corrects.
        raise UserError("--sample and --limit cannot be used together: --sample N already bounds the work")
    if args.sample is None and (args.design != UNIFORM or args.target_halfwidth is not None):
        raise UserError("--design score and --target_halfwidth need --sample N (the most rows to judge)")
    prepared = load_rows(args.input_file, [COL_PROMPT, COL_RESPONSE], COL_PROMPT, args.limit, {COL_TYPE: COL_CATEGORY},
                         seed=args.limit_seed)
    has_keyword = COL_IS_REJECTED in prepared.rows[0]
    upstream = (read_runinfo(args.input_file) if prepared.source is None else None) or {}
    all_jobs = jobs_from_rows(prepared.rows, KEY_COLUMNS)
    sampler = None if args.sample is None else Sampler(
        candidates(all_jobs, has_keyword), args.seed, args.design, args.design_floor, upstream.get("refusal_weights"))
    if sampler is not None and not sampler.cands:
        why = f"no row has a True/False {COL_IS_REJECTED!r}" if has_keyword else "no row has a response"
        warn(f"{args.input_file}: nothing to sample, {why}; the output will have no rows")
    cache = open_cache(args)
    clients = [make_client(n, args, cache) for n in names]
    ensemble = len(clients) > 1
    judge = "+".join(safe_name(n) for n in names)
    stem = output_stem(args.input_file)
    output_path = Path(args.output_path) if args.output_path else Path(f"{stem}_response_check_merged_{judge}.csv")
    failed_path = sibling(output_path, "_response_check_merged_", "_response_check_failed_", "_failed")
    unscored_path = sibling(output_path, "_response_check_merged_", "_response_check_unscored_", "_unscored")
    columns = COLUMNS + ([COL_IS_REJECTED] if has_keyword else [])
    if sampler is not None:  # a judged row carries its score and its inclusion probability
        columns += ([COL_REFUSAL_SCORE] if COL_REFUSAL_SCORE in prepared.rows[0] else []) + [COL_INCLUSION_PROBABILITY]
    current_pi: dict[str, float] = {}  # the round being judged: job key -> inclusion probability
    if ensemble:
        columns += [COL_REFUSAL_VOTES, COL_ANSWER_VOTES, COL_JUDGES_VOTED] + [c for n in names for c in judge_columns(n)]
    output = StageOutput(output_path, columns, failed_path, FAILED_COLUMNS, key_function(KEY_COLUMNS))
    audit = StageAudit(args.audit, names, lambda messages: ask_all(clients, messages, args),
                       (lambda cats: combine(cats, args.vote)[0]) if ensemble else None, args.vote)

    async def handle(job: Job) -> Outcome:
        prompt, response = job.row[COL_PROMPT], job.row[COL_RESPONSE]
        row = {COL_PROMPT: prompt, COL_RESPONSE: response, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}
        if has_keyword:
            row[COL_IS_REJECTED] = job.row.get(COL_IS_REJECTED, "")
        if sampler is not None:
            row.update({COL_REFUSAL_SCORE: job.row.get(COL_REFUSAL_SCORE, ""),
                        COL_INCLUSION_PROBABILITY: pi_text(current_pi[job.key])})
        if not response.strip():
            # Nothing to judge (an empty or filtered reply in stage 4): unscored, no call.
            row.update({COL_ANSWER_CATEGORY: UNSCORED, COL_ANSWER_TYPE_RESPONSE: ""})
            if ensemble:
                row.update({COL_REFUSAL_VOTES: 0, COL_ANSWER_VOTES: 0, COL_JUDGES_VOTED: 0})
                for n in names:
                    row.update(dict(zip(judge_columns(n), (UNSCORED, ""))))
            return Outcome(rows=[row], counters={"unscored": 1, "empty_response": 1})
        reason = too_long(prompt + response, args.max_prompt_chars)
        if reason:
            raise CallFailed(reason)
        replies = await ask_all(clients, judge_messages(prompt, response), args)
        errors = [f"{n}: {r}" for n, r in zip(names, replies) if isinstance(r, CallFailed)]
        if len(errors) == len(replies):  # no judge answered: a failed row, retried next run
            raise CallFailed(str(replies[0]) if not ensemble else "every judge failed: " + "; ".join(errors))
        cats = [JUDGE_FAILED if isinstance(r, CallFailed) else judge_verdict(r.text) or UNSCORED for r in replies]
        if not ensemble:
            row.update({COL_ANSWER_CATEGORY: cats[0], COL_ANSWER_TYPE_RESPONSE: replies[0].text or ""})
            return Outcome(rows=[row], counters={cats[0]: 1})
        for n, c, r in zip(names, cats, replies):
            row.update(dict(zip(judge_columns(n), (c, str(r) if isinstance(r, CallFailed) else r.text or ""))))
        revote([row], names, args.vote)
        row[COL_ANSWER_TYPE_RESPONSE] = "; ".join(f"{n}: {c}" for n, c in zip(names, cats))
        return Outcome(rows=[row], counters={row[COL_ANSWER_CATEGORY]: 1, "judge_calls_failed": len(errors),
                                             "judge_replies_unscored": cats.count(UNSCORED)})

    def failed_row(job: Job, error: str) -> dict[str, object]:
        return {COL_PROMPT: job.row[COL_PROMPT], COL_ERROR: error, COL_RESPONSE: job.row[COL_RESPONSE],
                COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    local = Path(args.input_file)
    if ensemble:
        who = {"check_models": names, "model_id": [c.endpoint.model for c in clients],
               "endpoint": [c.endpoint.identity for c in clients], "vote": args.vote}
    else:
        who = endpoint_info(clients[0])
    info = base_info(
        "response_checker", args, check_model=args.check_model, **who,
        target_model=upstream.get("model"), input_file=str(args.input_file), input_source=prepared.source,
        input_path=str(local.resolve()) if local.is_file() else None,
        skipped_blank_prompts=prepared.skipped_blank, output=str(output_path), failed_output=str(failed_path),
        unscored_output=str(unscored_path),
    )

    def run(jobs: list[Job], sample_info: dict, plan: SamplePlan | None, keep: SamplePlan | None, last: bool):
        def transform(rows: list[dict[str, str]]) -> list[dict[str, str]]:
            if plan is not None:  # exactly the sample (and, before the last round, what it may grow into)
                rows = with_probabilities(members(rows, keep or plan), plan)
            return revote(rows, names, args.vote) if ensemble else rows

        return execute(jobs=jobs, handler=handle, output=output, clients=clients, failed_row=failed_row,
                       info={**info, **sample_info}, desc=f"stage 5 {judge}", transform=transform, batch=batch,
                       also_plan=audit.plan(), last_round=last)

    results = []

    def run_round(plan: SamplePlan, keep: SamplePlan, last: bool):
        current_pi.clear()
        current_pi.update(plan.pi)
        results.append(run(plan.jobs, plan.info, plan, keep, last))
        return results[-1].rows, results[-1].counts.failed == 0

    rounds = None
    if sampler is None:
        plan = None
        result = run(all_jobs, {"sample_size": None, "sample_seed": None, "sampled_rows": len(all_jobs),
                                "population_rows": len(candidates(all_jobs, has_keyword))}, None, None, True)
    elif args.target_halfwidth is None:
        plan = sampler.plan(args.sample)
        run_round(plan, plan, True)
        result = results[-1]
    else:
        plan, rounds = in_rounds(sampler, args.sample, args.target_halfwidth, run_round)
        result = results[-1]
    extra: dict = dict(rounds or {})
    unscored = [r for r in result.rows if r[COL_ANSWER_CATEGORY] == UNSCORED]
    if unscored:
        write_atomic(unscored_path, columns, unscored)
    elif unscored_path.exists():
        unscored_path.unlink()
    what = f"judge {judge} on {input_name(args.input_file)}"
    if plan is not None:
        what += (f", a random sample of {plan.info['sampled_rows']} of its {plan.info['population_rows']} "
                 f"scored rows ({args.design} design, seed {args.seed}). This is the judge's rate on the sample "
                 "only; the report corrects the keyword rate of all rows with it")
    print(rejection_summary(result.rows, _verdict, failed=result.counts.failed,
                            title=f"{what} (refusal = direct_refusal or indirect_refusal; unscored = no verdict):"))
    if ensemble:
        pairs = pairwise({n: [is_refusal(r.get(judge_columns(n)[0])) for r in result.rows] for n in names})
        print(f"agreement between judges (refusal vs answer, rows both scored; vote: {args.vote}):")
        for p in pairs:
            kappa = "n/a" if p.kappa != p.kappa else f"{p.kappa:.3f}"
            pct = "n/a" if not p.rows else f"{p.agreement_pct:.1f}%"
            print(f"  {p.first} vs {p.second}: {pct} agree over {p.rows} rows, Cohen's kappa {kappa}")
        extra["judge_agreement"] = [p.as_dict() for p in pairs]
    extra["audit"] = audit.run(clients)  # after the rows: in batch mode its replies are in the cache now
    write_runinfo(output_path, {**result.info, **extra})
    if unscored:
        print(f"{len(unscored)} unscored row(s) are kept apart in {unscored_path}")
    if rounds is not None:
        print(rounds_text(rounds))
    return finish_run(result.counts, failed_path, args) or audit.exit_code(args)


def _verdict(row: dict[str, str]) -> bool | None:
    return is_refusal(row.get(COL_ANSWER_CATEGORY, ""))


def main(argv: Sequence[str] | None = None, doc: str | None = None) -> int:
    return run_cli(lambda a: _main(a, doc or __doc__), argv)


if __name__ == "__main__":
    sys.exit(main())
