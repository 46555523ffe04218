"""Stage 3 of OR-Bench: moderate prompts (or responses) with an LLM judge or an ensemble.

In:  --input_file_path (or --input_file): a CSV/parquet with `prompt` (and `response` for --column=response),
     `category` carried along; e.g. the rewriter's ../rewritter/harmful_prompts_rewrite.csv.
Out: ./{input stem}_moderation_merged_{moderator}_{column}.csv with columns
     prompt, [response,] category, is_toxic, moderation_result
     is_toxic is True, False, or `unparsed` when the choice cannot be read (never safe by default).
     --merge_result=False (or --no_merge_result): ..._toxic_moderation_... and
     ..._non_toxic_moderation_... instead
     (and ..._unparsed_moderation_... if any).
     Failed requests: {stem}_moderation_failed_{moderator}_{column}.csv, with the error.
     Run settings and counts: the merged name with .run.json.
Ensemble: --moderator_model=gpt4,llama3,gemini-1.5 (or --model=...) runs all moderators in one pass (file tag
gpt4+llama3+gemini-1.5) and adds toxic_votes, safe_votes and per-moderator
{name}_choice / {name}_is_toxic / {name}_moderation_result columns; is_toxic is decided by
--vote=majority (default), unanimous or any.
Defaults: --moderator_model=local, --column=prompt, temperature 0, max_tokens 1000.

Batch mode: --batch sends what the cache cannot answer through the endpoint's Batch API and
finishes from the cache; --batch_export DIR / --batch_import FILE... do the same through
`vllm run-batch` (docs/batch.md).

Example (from moderator/; installed: orbench moderate --model=gpt4 --input_file=...):
  python moderate_only.py --moderator_model=gpt4 --input_file_path=../rewritter/harmful_prompts_rewrite.csv --column=prompt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..run.cli import add_split_flag, str2bool
from ..protocol.constants import (
    COL_CATEGORY, COL_ERROR, COL_IS_TOXIC, COL_MODERATION_RESULT, COL_PROMPT, COL_RESPONSE, NONE_OF_THE_ABOVE, UNPARSED,
)
from ..tables.inputs import MAX_PROMPT_CHARS, key_function
from ..engine.jobs import Job, Outcome
from ..tables.naming import safe_name, sibling
from ..protocol.parsing import moderation_choice
from ..protocol.prompts import moderator_grammar, moderator_messages
from ..tables.resume import write_atomic
from ..run.runner import run_stage
from ..run.spec import OutputPlan, Reply, StageResult, StageSpec, first_failure
from ..tables.table_io import output_stem
from ..protocol.voting import VOTES, vote

COL_TOXIC_VOTES = "toxic_votes"
COL_SAFE_VOTES = "safe_votes"
SPLITS = {"toxic": "True", "non_toxic": "False", "unparsed": UNPARSED}  # --merge_result=False files


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


class Moderate(StageSpec):
    stage = "moderator"
    script = "moderate_only.py"
    model_option = "moderator_model"
    ensemble = True
    input_option = "input_file_path"
    max_chars_help = f"longer texts are not sent and go to the failed file (default {MAX_PROMPT_CHARS})"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--moderator_model", "--model", dest="moderator_model", default="local",
                       help="a moderator (a registry name, PROVIDER/MODEL or a model id), or a comma-separated ensemble "
                            "such as gpt4,llama3,gemini-1.5 (default: local)")
        p.add_argument("--input_file_path", "--input_file", dest="input_file_path", required=True,
                       help="CSV/parquet with 'prompt' (and 'response' for --column=response)")
        p.add_argument("--column", default="prompt", choices=("prompt", "response"),
                       help="which text to moderate (default prompt)")
        p.add_argument("--vote", default="majority", choices=VOTES, help="how an ensemble decides is_toxic (default majority)")
        p.add_argument("--merge_result", type=str2bool, default=True,
                       help="True: one merged file; False: separate toxic / non_toxic files (default True)")
        add_split_flag(p)
        p.add_argument("--output_path", default=None,
                       help="merged output CSV (default: ./{input stem}_moderation_merged_{moderator}_{column}.csv)")

    # ---- what the rows are

    def text_column(self) -> str:
        return self.args.column

    def required(self) -> Sequence[str]:
        return [COL_PROMPT] + ([COL_RESPONSE] if self.args.column == COL_RESPONSE else [])

    @property
    def key_columns(self) -> tuple[str, ...]:  # type: ignore[override]
        column = self.args.column
        return (COL_PROMPT, column, COL_CATEGORY) if column != COL_PROMPT else (COL_PROMPT, COL_CATEGORY)

    @property
    def names(self) -> list[str]:
        return self.ctx.names

    @property
    def is_ensemble(self) -> bool:
        return len(self.names) > 1

    @property
    def tag(self) -> str:
        return "+".join(safe_name(n) for n in self.names)

    def paths(self) -> dict[str, Path]:
        return output_names(self.args.input_file_path, self.tag, self.args.column)

    def columns(self) -> list[str]:
        column = self.args.column
        cols = [COL_PROMPT] + ([column] if column != COL_PROMPT else []) + [COL_CATEGORY, COL_IS_TOXIC,
                                                                              COL_MODERATION_RESULT]
        if self.is_ensemble:
            cols += [COL_TOXIC_VOTES, COL_SAFE_VOTES]
            for n in self.names:
                cols += [f"{n}_choice", f"{n}_is_toxic", f"{n}_moderation_result"]
        return cols

    def output(self) -> OutputPlan:
        paths = self.paths()
        if self.args.output_path:
            merged = Path(self.args.output_path)
            failed = sibling(merged, "_moderation_merged_", "_moderation_failed_", "_failed")
        else:
            merged, failed = paths["merged"], paths["failed"]
        return OutputPlan(merged, self.columns(), failed, [COL_PROMPT, COL_ERROR, COL_CATEGORY],
                          key_function(self.key_columns))

    def record(self) -> dict[str, Any]:
        clients = self.ctx.clients
        return {"moderators": self.names, "moderator_ids": [c.endpoint.model for c in clients],
                "providers": [c.endpoint.provider for c in clients], "endpoints": [c.endpoint.identity for c in clients],
                "vote": self.args.vote if self.is_ensemble else None, "column": self.args.column,
                **self.io_record(self.args.input_file_path, blank_key="skipped_blank")}

    def progress_label(self) -> str:
        return f"stage 3 {self.tag}"

    # ---- one row

    def requests(self, job: Job, attempt: int):
        msgs = moderator_messages(job.row[self.args.column])
        return [self.request(msgs, model=i, grammar=moderator_grammar()) for i in range(len(self.names))]

    def parse(self, job: Job, replies: list[Reply], attempt: int):
        failed = first_failure(replies)
        if failed:
            return failed
        choices = [moderation_choice(r.text) for r in replies]
        verdicts = [verdict_of(c) for c in choices]
        final = vote(verdicts, self.args.vote) if self.is_ensemble else verdicts[0]
        row: dict[str, object] = {COL_PROMPT: job.row[COL_PROMPT], COL_CATEGORY: job.row.get(COL_CATEGORY, ""),
                                  COL_IS_TOXIC: cell(final)}
        if self.args.column != COL_PROMPT:
            row[self.args.column] = job.row[self.args.column]
        if self.is_ensemble:
            row[COL_TOXIC_VOTES] = sum(v is True for v in verdicts)
            row[COL_SAFE_VOTES] = sum(v is False for v in verdicts)
            row[COL_MODERATION_RESULT] = "; ".join(f"{n}: {c or UNPARSED}" for n, c in zip(self.names, choices))
            for n, c, v, r in zip(self.names, choices, verdicts, replies):
                row.update({f"{n}_choice": c or UNPARSED, f"{n}_is_toxic": cell(v),
                            f"{n}_moderation_result": r.text or ""})
        else:
            row[COL_MODERATION_RESULT] = replies[0].text or ""
        label = "unparsed" if final is None else ("toxic" if final else "non_toxic")
        return Outcome(rows=[row], counters={label: 1, "unparsed_replies": sum(v is None for v in verdicts)})

    def failed_row(self, job: Job, error: str) -> dict[str, object]:
        return {COL_PROMPT: job.row[COL_PROMPT], COL_ERROR: error, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    # ---- the end

    def transform(self, rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return revote(rows, self.names, self.args.vote) if self.is_ensemble else rows

    def finish(self, result: StageResult) -> None:
        counts = {k: sum(1 for r in result.rows if str(r[COL_IS_TOXIC]) == v) for k, v in SPLITS.items()}
        if not self.args.merge_result:
            self._split(result.rows)
        print(f"moderated {len(result.rows)} rows with {self.tag}: {counts['toxic']} toxic, "
              f"{counts['non_toxic']} non-toxic, {counts['unparsed']} unparsed (not counted as either); "
              f"{result.counts.failed} failed")

    def _split(self, rows: list[dict[str, str]]) -> None:
        merged, paths = self.output().path, self.paths()
        for key, want in SPLITS.items():
            part = [r for r in rows if str(r[COL_IS_TOXIC]) == want]
            target = (sibling(merged, "_moderation_merged_", f"_{key}_moderation_", f"_{key}")
                      if self.args.output_path else paths[key])
            if part or key != "unparsed":
                write_atomic(target, self.columns(), part)
        merged.unlink()


def main(argv: Sequence[str] | None = None, doc: str | None = None, prog: str | None = None) -> int:
    return run_stage(Moderate, argv, doc or __doc__, prog)


if __name__ == "__main__":
    sys.exit(main())
