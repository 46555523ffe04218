"""Stage 2 of OR-Bench: rewrite each toxic seed into 5 seemingly toxic but safe prompts.

In:  --toxic_seed_path (or --input_file): a stage-1 CSV with `prompt, category` (e.g.
     ../toxic_prompt_generator/harmful_prompts.csv).
Out: ./{input stem}_rewrite.csv (or --output_path) with columns prompt, toxic_seed, category.
     Exact duplicate rewrites are dropped across the run (first in input order wins).
     Seeds whose request failed, or whose replies held no readable rewrite, go to
     {input stem}_rewrite_failed.csv and are retried by a re-run. Settings: .run.json beside.
How: a few-shot instruction (four worked examples) asks for 5 rewrites that an over-cautious
model might refuse yet are harmless to answer: no safety words, no blunt harm words, no
"but"/"however" reversal, no fiction or hypotheticals. Replies are read as [[...]] items,
else «...» items, else numbered lines. Temperature 0.7, max_tokens 1000.
Default model: local (the original hard-coded Mixtral-8x7B; --model picks any).

Batch mode: --batch sends what the cache cannot answer through the endpoint's Batch API and
finishes from the cache; --batch_export DIR / --batch_import FILE... do the same through
`vllm run-batch` (docs/batch.md).

Example (from rewritter/; installed: orbench rewrite --input_file=...):
  python mixtral_rewrite_only.py --toxic_seed_path=../toxic_prompt_generator/harmful_prompts.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..run.cli import positive_int
from ..protocol.constants import COL_CATEGORY, COL_ERROR, COL_PROMPT, COL_TOXIC_SEED
from ..errors import warn
from ..tables.inputs import MAX_PROMPT_CHARS
from ..engine.jobs import Failed, Job, Outcome
from ..tables.naming import sibling
from ..protocol.parsing import prompt_list
from ..protocol.prompts import prompt_list_grammar, rewriter_messages
from ..tables.resume import content_hash
from ..tables.runinfo import endpoint_info
from ..run.runner import run_stage
from ..run.spec import OutputPlan, Reply, Retry, RunContext, StageResult, StageSpec, first_failure
from ..tables.table_io import output_stem

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


def _output_key(row: dict[str, str]) -> str:  # output rows carry the seed as toxic_seed
    return content_hash([row.get(COL_TOXIC_SEED, ""), row.get(COL_CATEGORY, "")])


class Rewrite(StageSpec):
    stage = "rewritter"
    script = "mixtral_rewrite_only.py"
    temperature = 0.7
    input_option = "toxic_seed_path"
    required_columns = (COL_PROMPT,)
    aliases = {COL_TOXIC_SEED: COL_PROMPT}
    max_chars_help = f"longer seeds are not sent and go to the failed file (default {MAX_PROMPT_CHARS})"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--toxic_seed_path", "--input_file", dest="toxic_seed_path", required=True,
                       help="stage-1 CSV (prompt, category); a 'toxic_seed' column also works")
        p.add_argument("--output_path", default=None, help="output CSV (default: ./{input stem}_rewrite.csv)")
        p.add_argument("--model", default="local", help="rewriter model (default: local; the paper used Mixtral-8x7B)")
        p.add_argument("--num_rewrites", type=positive_int, default=REWRITES_PER_SEED,
                       help="rewrites per seed (default 5)")
        p.add_argument("--parse_attempts", type=positive_int, default=3,
                       help="if a reply holds no readable rewrite, ask again with the next sample number, up to this "
                            "many times (default 3)")

    def bind(self, ctx: RunContext) -> None:
        """One job per distinct seed: a repeated seed would only produce repeated rewrites."""
        super().bind(ctx)
        unique: dict[tuple[str, str], dict[str, str]] = {}
        for r in ctx.rows.rows:
            unique.setdefault((r[COL_PROMPT], r.get(COL_CATEGORY, "")), r)
        if len(unique) < len(ctx.rows.rows):
            warn(f"{len(ctx.rows.rows) - len(unique)} repeated seed(s) rewritten once")
        self.seed_jobs = [Job(key=content_hash([seed, cat]), index=i, row=r)
                          for i, ((seed, cat), r) in enumerate(unique.items())]

    def jobs(self, rows: list[dict[str, str]]) -> list[Job]:
        return self.seed_jobs

    def output(self) -> OutputPlan:
        path = Path(self.args.output_path or f"{output_stem(self.args.toxic_seed_path)}_rewrite.csv")
        return OutputPlan(path, COLUMNS, sibling(path, "_rewrite", "_rewrite_failed", "_failed"), FAILED_COLUMNS,
                          _output_key, many_rows_per_key=True)

    def record(self) -> dict[str, Any]:
        plan = self.output()
        return {"model": self.args.model, **endpoint_info(self.ctx.clients[0]), "num_rewrites": self.args.num_rewrites,
                "input_file": str(self.args.toxic_seed_path), "input_source": self.ctx.rows.source,
                "seeds": len(self.seed_jobs), "output": str(plan.path), "failed_output": str(plan.failed_path),
                "skipped_blank": self.ctx.rows.skipped_blank}

    def progress_label(self) -> str:
        return f"stage 2 {self.args.model}"

    def requests(self, job: Job, attempt: int):
        msgs = rewriter_messages(job.row[COL_PROMPT], self.args.num_rewrites)
        return [self.request(msgs, sample=attempt, grammar=prompt_list_grammar(self.args.num_rewrites))]

    def parse(self, job: Job, replies: list[Reply], attempt: int):
        failed = first_failure(replies)
        if failed:
            return failed
        seed = job.row[COL_PROMPT]
        items = list(dict.fromkeys(x for x in prompt_list(replies[0].text) if x != seed))[: self.args.num_rewrites]
        if items:
            rows = [{COL_PROMPT: x, COL_TOXIC_SEED: seed, COL_CATEGORY: job.row.get(COL_CATEGORY, "")} for x in items]
            return Outcome(rows=rows, counters={"rewrites_parsed": len(items), "retried_unparsed": attempt})
        if attempt + 1 < self.args.parse_attempts:
            return Retry()
        return Failed(f"no rewrite could be read from {self.args.parse_attempts} replies "
                      f"(no [[ ]], « » or numbered lines)")

    def failed_row(self, job: Job, error: str) -> dict[str, object]:
        return {COL_TOXIC_SEED: job.row[COL_PROMPT], COL_ERROR: error, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    def transform(self, rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return dedupe_exact(rows)

    def finish(self, result: StageResult) -> None:
        parsed = result.counts.counters.get("rewrites_parsed", 0)
        print(f"rewrote {result.counts.done} seed(s) into {len(result.rows)} unique prompts in {self.output().path} "
              f"({parsed} parsed this run before de-duplication); {result.counts.failed} seed(s) failed")


def main(argv: Sequence[str] | None = None, doc: str | None = None, prog: str | None = None) -> int:
    return run_stage(Rewrite, argv, doc or __doc__, prog)


if __name__ == "__main__":
    sys.exit(main())
