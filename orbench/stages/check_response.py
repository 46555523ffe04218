"""Stage 5: an LLM judge sorts each response into direct_answer / direct_refusal / indirect_refusal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from ..cli import add_run_options, make_client, make_parser, open_cache, run_cli
from ..constants import (
    COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_CATEGORY, COL_ERROR, COL_PROMPT, COL_RESPONSE, COL_TYPE,
    REFUSAL_CLASSES, UNSCORED,
)
from ..llm import CallFailed
from ..parsing import judge_verdict
from ..prompts import judge_grammar, judge_messages
from ..resume import StageOutput, write_atomic
from ..runner import Job, Outcome
from ..stage import (
    MAX_PROMPT_CHARS, base_info, endpoint_info, execute, jobs_from_rows, key_function, load_rows,
    print_failed_note, safe_name, sibling, too_long,
)
from ..summary import rejection_summary
from ..table_io import output_stem

COLUMNS = [COL_PROMPT, COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_RESPONSE, COL_CATEGORY]
FAILED_COLUMNS = [COL_PROMPT, COL_ERROR, COL_RESPONSE, COL_CATEGORY]
KEY_COLUMNS = [COL_PROMPT, COL_RESPONSE, COL_CATEGORY]


def build_parser(doc: str | None):
    p = make_parser("check_response.py", doc)
    p.add_argument("--check_model", default="local", help="the judge: a registry name or model id (default: local)")
    p.add_argument("--input_file", required=True, help="stage-4 output (or any CSV/parquet) with 'prompt' and 'response'")
    p.add_argument("--output_path", default=None,
                   help="merged output CSV (default: ./{input stem}_response_check_merged_{check_model}.csv)")
    p.add_argument("--max_prompt_chars", type=int, default=MAX_PROMPT_CHARS,
                   help="a longer question+response is not sent (failed file)")
    add_run_options(p, temperature=0.0, max_tokens=1000)
    return p


def _main(argv: Sequence[str] | None, doc: str | None) -> int:
    args = build_parser(doc).parse_args(argv)
    prepared = load_rows(args.input_file, [COL_PROMPT, COL_RESPONSE], COL_PROMPT, args.limit, {COL_TYPE: COL_CATEGORY})
    cache = open_cache(args)
    client = make_client(args.check_model, args, cache)
    judge = safe_name(args.check_model)
    stem = output_stem(args.input_file)
    output_path = Path(args.output_path) if args.output_path else Path(f"{stem}_response_check_merged_{judge}.csv")
    failed_path = sibling(output_path, "_response_check_merged_", "_response_check_failed_", "_failed")
    unscored_path = sibling(output_path, "_response_check_merged_", "_response_check_unscored_", "_unscored")
    output = StageOutput(output_path, COLUMNS, failed_path, FAILED_COLUMNS, key_function(KEY_COLUMNS))

    async def handle(job: Job) -> Outcome:
        prompt, response = job.row[COL_PROMPT], job.row[COL_RESPONSE]
        row = {COL_PROMPT: prompt, COL_RESPONSE: response, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}
        if not response.strip():
            # Nothing to judge (an empty or filtered reply in stage 4): unscored, no call.
            return Outcome(rows=[{**row, COL_ANSWER_CATEGORY: UNSCORED, COL_ANSWER_TYPE_RESPONSE: ""}],
                           counters={"unscored": 1, "empty_response": 1})
        reason = too_long(prompt + response, args.max_prompt_chars)
        if reason:
            raise CallFailed(reason)
        res = await client.complete(judge_messages(prompt, response), temperature=args.temperature,
                                    max_tokens=args.max_tokens, grammar=judge_grammar())
        verdict = judge_verdict(res.text) or UNSCORED
        return Outcome(rows=[{**row, COL_ANSWER_CATEGORY: verdict, COL_ANSWER_TYPE_RESPONSE: res.text or ""}],
                       counters={verdict: 1})

    def failed_row(job: Job, error: str) -> dict[str, object]:
        return {COL_PROMPT: job.row[COL_PROMPT], COL_ERROR: error, COL_RESPONSE: job.row[COL_RESPONSE],
                COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    from ..runinfo import read_runinfo

    upstream = read_runinfo(args.input_file) or {}
    info = base_info(
        "response_checker", args, check_model=args.check_model, **endpoint_info(client),
        target_model=upstream.get("model"), input_file=str(args.input_file),
        skipped_blank_prompts=prepared.skipped_blank, output=str(output_path), failed_output=str(failed_path),
        unscored_output=str(unscored_path),
    )
    result = execute(
        jobs=jobs_from_rows(prepared.rows, KEY_COLUMNS), handler=handle, output=output, clients=[client],
        failed_row=failed_row, info=info, desc=f"stage 5 {args.check_model}",
    )
    unscored = [r for r in result.rows if r[COL_ANSWER_CATEGORY] == UNSCORED]
    if unscored:
        write_atomic(unscored_path, COLUMNS, unscored)
    elif unscored_path.exists():
        unscored_path.unlink()
    print(rejection_summary(result.rows, _verdict, failed=result.counts.failed,
                            title=f"judge {args.check_model} on {Path(args.input_file).name} "
                                  f"(refusal = direct_refusal or indirect_refusal; unscored = verdict not readable):"))
    if unscored:
        print(f"{len(unscored)} unscored row(s) are kept apart in {unscored_path}")
    print_failed_note(result.counts, failed_path)
    return 0


def _verdict(row: dict[str, str]) -> bool | None:
    v = row.get(COL_ANSWER_CATEGORY, "")
    return None if v == UNSCORED or not v else v in REFUSAL_CLASSES


def main(argv: Sequence[str] | None = None, doc: str | None = None) -> int:
    return run_cli(lambda a: _main(a, doc or __doc__), argv)


if __name__ == "__main__":
    sys.exit(main())
