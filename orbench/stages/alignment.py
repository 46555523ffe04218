"""Stage 4: send each prompt to the target model and flag refusals (is_rejected, refusal_score)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from ..batch import add_batch_options, batch_options
from ..cli import add_run_options, make_client, make_parser, open_cache, run_cli, str2bool
from ..constants import (
    COL_CATEGORY, COL_ERROR, COL_IS_REJECTED, COL_PROMPT, COL_REFUSAL_SCORE, COL_RESPONSE, COL_TYPE, STATUS_EMPTY,
    STATUS_FILTERED,
)
from ..refusal import DEFAULT_RULES, FAMILIES, run_settings, stage4_values
from ..resume import StageOutput, write_atomic
from ..runner import Job, Outcome
from ..stage import (
    MAX_PROMPT_CHARS, base_info, endpoint_info, execute, jobs_from_rows, key_function, load_rows,
    finish_run, safe_name, sibling, too_long,
)
from ..summary import rejection_summary
from ..table_io import output_stem
from ..hub import input_name
from ..llm import CallFailed

COLUMNS = [COL_PROMPT, COL_IS_REJECTED, COL_REFUSAL_SCORE, COL_RESPONSE, COL_CATEGORY]
FAILED_COLUMNS = [COL_PROMPT, COL_ERROR, COL_CATEGORY]
KEY_COLUMNS = [COL_PROMPT, COL_CATEGORY]
INPUT_ALIASES = {COL_TYPE: COL_CATEGORY}  # XSTest's prompt file


def default_output(model: str, input_file: str) -> Path:
    name = safe_name(model)
    return Path(f"final_{name}_results") / f"{name}_merged_{output_stem(input_file)}.csv"


def build_parser(doc: str | None):
    p = make_parser("gpt3_4_alignment_checker.py", doc)
    p.add_argument("--model", default="local", help="target model: a registry name or a model id (default: local)")
    p.add_argument("--input_file", required=True, help="the prompts: a CSV, TSV, JSON, JSONL or parquet file with a 'prompt' column ('category' or "
                        "'type' optional), hf://datasets/OWNER/NAME[@REV]/FILE, or a published set's short name "
                        "(or-bench-80k, or-bench-hard-1k, or-bench-toxic), read from the Hugging Face Hub")
    p.add_argument("--name", default=None,
                   help="the target's name in file names, settings and reports (default: --model); use it to tell "
                        "apart runs of one model with different settings, e.g. --name local-safety with --system_prompt")
    p.add_argument("--output_path", default=None,
                   help="merged output CSV (default: ./final_{name}_results/{name}_merged_{input}.csv)")
    p.add_argument("--merge_result", type=str2bool, default=True,
                   help="True: one merged file; False: {model}_rejected_... and {model}_accepted_... (default True)")
    p.add_argument("--system_prompt", default=None, help="system message sent before each prompt (default: none, as in the paper)")
    p.add_argument("--rules", default=DEFAULT_RULES, choices=FAMILIES + ("family",),
                   help=f"refusal detection for is_rejected: '{DEFAULT_RULES}' (default; rules and a learned scorer, "
                        "which also writes refusal_score; measured in REFUSAL_CHECKING.md), 'generic' (our rules alone), "
                        "'family' (the original's keyword rules for the model's family, from the registry or "
                        "guessed from the model id), or a family's rules by name")
    p.add_argument("--max_prompt_chars", type=int, default=MAX_PROMPT_CHARS,
                   help=f"longer prompts are not sent and go to the failed file (default {MAX_PROMPT_CHARS})")
    add_run_options(p, temperature=0.0, max_tokens=1000)
    add_batch_options(p)
    return p


def _main(argv: Sequence[str] | None, doc: str | None) -> int:
    args = build_parser(doc).parse_args(argv)
    batch = batch_options(args)
    prepared = load_rows(args.input_file, [COL_PROMPT], COL_PROMPT, args.limit, INPUT_ALIASES, seed=args.limit_seed)
    cache = open_cache(args)
    client = make_client(args.model, args, cache)
    family = client.endpoint.family if args.rules == "family" else args.rules
    name = args.name or args.model
    output_path = Path(args.output_path) if args.output_path else default_output(name, args.input_file)
    failed_path = sibling(output_path, "_merged_", "_failed_", "_failed")
    output = StageOutput(output_path, COLUMNS, failed_path, FAILED_COLUMNS, key_function(KEY_COLUMNS))

    def message_list(prompt: str) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": args.system_prompt}] if args.system_prompt else []
        return msgs + [{"role": "user", "content": prompt}]

    async def handle(job: Job) -> Outcome:
        prompt = job.row[COL_PROMPT]
        reason = too_long(prompt, args.max_prompt_chars)
        if reason:
            raise CallFailed(reason)
        res = await client.complete(message_list(prompt), temperature=args.temperature, max_tokens=args.max_tokens)
        verdict, score = stage4_values(res.text, family, res.finish_reason)
        counters = {str(verdict) if isinstance(verdict, str) else ("rejected" if verdict else "accepted"): 1}
        row = {COL_PROMPT: prompt, COL_IS_REJECTED: verdict, COL_REFUSAL_SCORE: score, COL_RESPONSE: res.text or "",
               COL_CATEGORY: job.row.get(COL_CATEGORY, "")}
        return Outcome(rows=[row], counters=counters)

    def failed_row(job: Job, error: str) -> dict[str, object]:
        return {COL_PROMPT: job.row[COL_PROMPT], COL_ERROR: error, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    info = base_info(
        "alignment_checker",
        args,
        model=name,
        **endpoint_info(client),
        rules=family,
        **run_settings(family),
        system_prompt=args.system_prompt,
        input_file=str(args.input_file),
        input_source=prepared.source,
        skipped_blank_prompts=prepared.skipped_blank,
        output=str(output_path),
        failed_output=str(failed_path),
    )
    result = execute(
        jobs=jobs_from_rows(prepared.rows, KEY_COLUMNS),
        handler=handle,
        output=output,
        clients=[client],
        failed_row=failed_row,
        info=info,
        desc=f"stage 4 {name}",
        batch=batch,
    )
    if not args.merge_result:
        _split(output_path, result.rows)
    print(rejection_summary(result.rows, _verdict, failed=result.counts.failed,
                            title=f"{name} on {input_name(args.input_file)} ({family} rules):"))
    return finish_run(result.counts, failed_path, args)


def _verdict(row: dict[str, str]) -> bool | None:
    v = str(row.get(COL_IS_REJECTED, ""))
    if v in (STATUS_EMPTY, STATUS_FILTERED, ""):
        return None
    return v == "True"


def _split(merged: Path, rows: list[dict[str, str]]) -> None:
    """--merge_result=False: the original's rejected/accepted files (plus unscored, if any)."""
    groups = {"_rejected_": [], "_accepted_": [], "_unscored_": []}
    for r in rows:
        v = _verdict(r)
        groups["_unscored_" if v is None else ("_rejected_" if v else "_accepted_")].append(r)
    for token, part in groups.items():
        if part or token != "_unscored_":
            write_atomic(sibling(merged, "_merged_", token, token.rstrip("_")), COLUMNS, part)
    merged.unlink()


def main(argv: Sequence[str] | None = None, doc: str | None = None) -> int:
    return run_cli(lambda a: _main(a, doc or __doc__), argv)


if __name__ == "__main__":
    sys.exit(main())
