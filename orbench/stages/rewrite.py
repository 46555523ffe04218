"""Stage 2: rewrite each toxic seed into 5 prompts that look harmful but are safe."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from ..batch import add_batch_options, batch_options
from ..cli import add_run_options, make_client, make_parser, open_cache, positive_int, run_cli
from ..constants import COL_CATEGORY, COL_ERROR, COL_PROMPT, COL_TOXIC_SEED
from ..llm import CallFailed
from ..parsing import prompt_list
from ..prompts import prompt_list_grammar, rewriter_messages
from ..resume import StageOutput, content_hash
from ..runner import Job, Outcome
from ..stage import (
    MAX_PROMPT_CHARS, base_info, endpoint_info, execute, load_rows, finish_run, sibling, too_long, warn,
)
from ..table_io import output_stem

COLUMNS = [COL_PROMPT, COL_TOXIC_SEED, COL_CATEGORY]
FAILED_COLUMNS = [COL_TOXIC_SEED, COL_ERROR, COL_CATEGORY]
REWRITES_PER_SEED = 5


def dedupe_exact(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Drop exact repeats of a rewritten prompt across the run, keeping the first in input order."""
    seen: set[str] = set()
    out = []
    for r in rows:
        if r[COL_PROMPT] not in seen:
            seen.add(r[COL_PROMPT])
            out.append(r)
    return out


def build_parser(doc: str | None):
    p = make_parser("mixtral_rewrite_only.py", doc)
    p.add_argument("--toxic_seed_path", required=True, help="stage-1 CSV (prompt, category); a 'toxic_seed' column also works")
    p.add_argument("--output_path", default=None, help="output CSV (default: ./{input stem}_rewrite.csv)")
    p.add_argument("--model", default="local", help="rewriter model (default: local; the paper used Mixtral-8x7B)")
    p.add_argument("--num_rewrites", type=positive_int, default=REWRITES_PER_SEED, help="rewrites per seed (default 5)")
    p.add_argument("--parse_attempts", type=positive_int, default=3,
                   help="if a reply holds no readable rewrite, ask again with the next sample number, up to this many times (default 3)")
    p.add_argument("--max_prompt_chars", type=int, default=MAX_PROMPT_CHARS, help="longer seeds are not sent (failed file)")
    add_run_options(p, temperature=0.7, max_tokens=1000)
    add_batch_options(p)
    return p


def _main(argv: Sequence[str] | None, doc: str | None) -> int:
    args = build_parser(doc).parse_args(argv)
    batch = batch_options(args)
    prepared = load_rows(args.toxic_seed_path, [COL_PROMPT], COL_PROMPT, args.limit, {COL_TOXIC_SEED: COL_PROMPT},
                         seed=args.limit_seed)
    # One job per distinct seed: a repeated seed would only produce repeated rewrites.
    unique: dict[tuple[str, str], dict[str, str]] = {}
    for r in prepared.rows:
        unique.setdefault((r[COL_PROMPT], r.get(COL_CATEGORY, "")), r)
    if len(unique) < len(prepared.rows):
        warn(f"{len(prepared.rows) - len(unique)} repeated seed(s) rewritten once")
    cache = open_cache(args)
    client = make_client(args.model, args, cache)
    output_path = Path(args.output_path or f"{output_stem(args.toxic_seed_path)}_rewrite.csv")
    failed_path = sibling(output_path, "_rewrite", "_rewrite_failed", "_failed")

    def key_of(row: dict[str, str]) -> str:  # output rows carry the seed as toxic_seed
        return content_hash([row.get(COL_TOXIC_SEED, ""), row.get(COL_CATEGORY, "")])

    jobs = [Job(key=content_hash([seed, cat]), index=i, row=r) for i, ((seed, cat), r) in enumerate(unique.items())]
    output = StageOutput(output_path, COLUMNS, failed_path, FAILED_COLUMNS, key_of, many_rows_per_key=True)

    async def handle(job: Job) -> Outcome:
        seed = job.row[COL_PROMPT]
        reason = too_long(seed, args.max_prompt_chars)
        if reason:
            raise CallFailed(reason)
        msgs = rewriter_messages(seed, args.num_rewrites)
        for attempt in range(args.parse_attempts):
            res = await client.complete(msgs, temperature=args.temperature, max_tokens=args.max_tokens, sample=attempt,
                                        grammar=prompt_list_grammar(args.num_rewrites))
            items = list(dict.fromkeys(x for x in prompt_list(res.text) if x != seed))[: args.num_rewrites]
            if items:
                rows = [{COL_PROMPT: x, COL_TOXIC_SEED: seed, COL_CATEGORY: job.row.get(COL_CATEGORY, "")} for x in items]
                return Outcome(rows=rows, counters={"rewrites_parsed": len(items), "retried_unparsed": attempt})
        raise CallFailed(f"no rewrite could be read from {args.parse_attempts} replies (no [[ ]], « » or numbered lines)")

    def failed_row(job: Job, error: str) -> dict[str, object]:
        return {COL_TOXIC_SEED: job.row[COL_PROMPT], COL_ERROR: error, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    info = base_info("rewritter", args, model=args.model, **endpoint_info(client), num_rewrites=args.num_rewrites,
                     input_file=str(args.toxic_seed_path), input_source=prepared.source, seeds=len(jobs), output=str(output_path),
                     failed_output=str(failed_path), skipped_blank=prepared.skipped_blank)
    result = execute(jobs=jobs, handler=handle, output=output, clients=[client], failed_row=failed_row,
                     info=info, desc=f"stage 2 {args.model}", transform=dedupe_exact, batch=batch)
    parsed = result.counts.counters.get("rewrites_parsed", 0)
    print(f"rewrote {result.counts.done} seed(s) into {len(result.rows)} unique prompts in {output_path} "
          f"({parsed} parsed this run before de-duplication); {result.counts.failed} seed(s) failed")
    return finish_run(result.counts, failed_path, args)


def main(argv: Sequence[str] | None = None, doc: str | None = None) -> int:
    return run_cli(lambda a: _main(a, doc or __doc__), argv)


if __name__ == "__main__":
    sys.exit(main())
