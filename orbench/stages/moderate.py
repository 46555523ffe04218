"""Stage 3: moderate texts with one LLM judge or an ensemble, and vote."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Sequence

from ..batch import add_batch_options, batch_options
from ..cli import add_run_options, make_client, make_parser, open_cache, run_cli, str2bool
from ..constants import (
    COL_CATEGORY, COL_ERROR, COL_IS_TOXIC, COL_MODERATION_RESULT, COL_PROMPT, COL_RESPONSE, NONE_OF_THE_ABOVE, UNPARSED,
)
from ..errors import UserError
from ..llm import CallFailed
from ..parsing import moderation_choice
from ..prompts import moderator_grammar, moderator_messages
from ..resume import StageOutput, write_atomic
from ..runner import Job, Outcome
from ..stage import (
    MAX_PROMPT_CHARS, base_info, execute, jobs_from_rows, key_function, load_rows, finish_run,
    safe_name, sibling, too_long,
)
from ..table_io import output_stem
from ..voting import VOTES, vote

COL_TOXIC_VOTES = "toxic_votes"
COL_SAFE_VOTES = "safe_votes"


def verdict_of(choice: str | None) -> bool | None:
    """True = toxic, False = safe, None = the reply could not be read."""
    if choice is None:
        return None
    return choice != NONE_OF_THE_ABOVE


def cell(verdict: bool | None) -> object:
    return UNPARSED if verdict is None else verdict


def revote(rows: list[dict[str, str]], names: Sequence[str], rule: str) -> list[dict[str, str]]:
    """Decide is_toxic again from the per-moderator columns: rows kept from an earlier run
    may have been voted under another --vote rule."""
    for r in rows:
        r[COL_IS_TOXIC] = cell(vote([{"True": True, "False": False}.get(str(r.get(f"{n}_is_toxic"))) for n in names], rule))
    return rows


def output_names(input_path: str, moderator: str, column: str) -> dict[str, Path]:
    stem = output_stem(input_path)
    tag = f"{moderator}_{column}"
    return {
        "merged": Path(f"{stem}_moderation_merged_{tag}.csv"),
        "failed": Path(f"{stem}_moderation_failed_{tag}.csv"),
        "toxic": Path(f"{stem}_toxic_moderation_{tag}.csv"),
        "non_toxic": Path(f"{stem}_non_toxic_moderation_{tag}.csv"),
        "unparsed": Path(f"{stem}_unparsed_moderation_{tag}.csv"),
    }


def build_parser(doc: str | None):
    p = make_parser("moderate_only.py", doc)
    p.add_argument("--moderator_model", default="local",
                   help="a moderator, or a comma-separated ensemble such as gpt4,llama3,gemini-1.5 (default: local)")
    p.add_argument("--input_file_path", required=True, help="CSV/parquet with 'prompt' (and 'response' for --column=response)")
    p.add_argument("--column", default="prompt", choices=("prompt", "response"), help="which text to moderate (default prompt)")
    p.add_argument("--vote", default="majority", choices=VOTES, help="how an ensemble decides is_toxic (default majority)")
    p.add_argument("--merge_result", type=str2bool, default=True,
                   help="True: one merged file; False: separate toxic / non_toxic files (default True)")
    p.add_argument("--output_path", default=None,
                   help="merged output CSV (default: ./{input stem}_moderation_merged_{moderator}_{column}.csv)")
    p.add_argument("--max_prompt_chars", type=int, default=MAX_PROMPT_CHARS, help="longer texts are not sent (failed file)")
    add_run_options(p, temperature=0.0, max_tokens=1000)
    add_batch_options(p)
    return p


def _main(argv: Sequence[str] | None, doc: str | None) -> int:
    args = build_parser(doc).parse_args(argv)
    batch = batch_options(args)
    names = [m.strip() for m in args.moderator_model.split(",") if m.strip()]
    if not names:
        raise UserError("--moderator_model is empty")
    if len(set(names)) != len(names):
        raise UserError(f"--moderator_model lists a model twice: {args.moderator_model}")
    column = args.column
    required = [COL_PROMPT] + ([COL_RESPONSE] if column == COL_RESPONSE else [])
    prepared = load_rows(args.input_file_path, required, column, args.limit, seed=args.limit_seed)

    cache = open_cache(args)
    clients = [make_client(n, args, cache) for n in names]
    ensemble = len(clients) > 1
    tag = "+".join(safe_name(n) for n in names)
    paths = output_names(args.input_file_path, tag, column)
    merged = Path(args.output_path) if args.output_path else paths["merged"]
    failed_path = sibling(merged, "_moderation_merged_", "_moderation_failed_", "_failed") if args.output_path else paths["failed"]

    base_cols = [COL_PROMPT] + ([column] if column != COL_PROMPT else []) + [COL_CATEGORY, COL_IS_TOXIC, COL_MODERATION_RESULT]
    per_model_cols: list[str] = []
    if ensemble:
        base_cols += [COL_TOXIC_VOTES, COL_SAFE_VOTES]
        for n in names:
            per_model_cols += [f"{n}_choice", f"{n}_is_toxic", f"{n}_moderation_result"]
    columns = base_cols + per_model_cols
    key_cols = [COL_PROMPT, column, COL_CATEGORY] if column != COL_PROMPT else [COL_PROMPT, COL_CATEGORY]
    output = StageOutput(merged, columns, failed_path, [COL_PROMPT, COL_ERROR, COL_CATEGORY], key_function(key_cols))

    async def handle(job: Job) -> Outcome:
        text = job.row[column]
        reason = too_long(text, args.max_prompt_chars)
        if reason:
            raise CallFailed(reason)
        msgs = moderator_messages(text)
        # All moderators at once: an ensemble costs about one round trip per row.
        results = await asyncio.gather(
            *(c.complete(msgs, temperature=args.temperature, max_tokens=args.max_tokens, grammar=moderator_grammar())
              for c in clients)
        )
        choices = [moderation_choice(r.text) for r in results]
        verdicts = [verdict_of(c) for c in choices]
        final = vote(verdicts, args.vote) if ensemble else verdicts[0]
        row: dict[str, object] = {
            COL_PROMPT: job.row[COL_PROMPT],
            COL_CATEGORY: job.row.get(COL_CATEGORY, ""),
            COL_IS_TOXIC: cell(final),
        }
        if column != COL_PROMPT:
            row[column] = text
        if ensemble:
            row[COL_TOXIC_VOTES] = sum(v is True for v in verdicts)
            row[COL_SAFE_VOTES] = sum(v is False for v in verdicts)
            row[COL_MODERATION_RESULT] = "; ".join(f"{n}: {c or UNPARSED}" for n, c in zip(names, choices))
            for n, c, v, r in zip(names, choices, verdicts, results):
                row[f"{n}_choice"] = c or UNPARSED
                row[f"{n}_is_toxic"] = cell(v)
                row[f"{n}_moderation_result"] = r.text or ""
        else:
            row[COL_MODERATION_RESULT] = results[0].text or ""
        label = "unparsed" if final is None else ("toxic" if final else "non_toxic")
        return Outcome(rows=[row], counters={label: 1, "unparsed_replies": sum(v is None for v in verdicts)})

    def failed_row(job: Job, error: str) -> dict[str, object]:
        return {COL_PROMPT: job.row[COL_PROMPT], COL_ERROR: error, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    info = base_info(
        "moderator", args, moderators=names, moderator_ids=[c.endpoint.model for c in clients],
        endpoints=[c.endpoint.identity for c in clients], vote=args.vote if ensemble else None, column=column,
        input_file=str(args.input_file_path), input_source=prepared.source, skipped_blank=prepared.skipped_blank, output=str(merged),
        failed_output=str(failed_path),
    )
    result = execute(
        jobs=jobs_from_rows(prepared.rows, key_cols), handler=handle, output=output, clients=clients,
        failed_row=failed_row, info=info, desc=f"stage 3 {tag}", batch=batch,
        transform=(lambda rows: revote(rows, names, args.vote)) if ensemble else None,
    )
    counts = {k: sum(1 for r in result.rows if str(r[COL_IS_TOXIC]) == v)
              for k, v in (("toxic", "True"), ("non_toxic", "False"), ("unparsed", UNPARSED))}
    if not args.merge_result:
        for key in ("toxic", "non_toxic", "unparsed"):
            want = {"toxic": "True", "non_toxic": "False", "unparsed": UNPARSED}[key]
            part = [r for r in result.rows if str(r[COL_IS_TOXIC]) == want]
            target = paths[key] if not args.output_path else sibling(merged, "_moderation_merged_", f"_{key}_moderation_", f"_{key}")
            if part or key != "unparsed":
                write_atomic(target, columns, part)
        merged.unlink()
    print(f"moderated {len(result.rows)} rows with {tag}: {counts['toxic']} toxic, {counts['non_toxic']} non-toxic, "
          f"{counts['unparsed']} unparsed (not counted as either); {result.counts.failed} failed")
    return finish_run(result.counts, failed_path, args)


def main(argv: Sequence[str] | None = None, doc: str | None = None) -> int:
    return run_cli(lambda a: _main(a, doc or __doc__), argv)


if __name__ == "__main__":
    sys.exit(main())
