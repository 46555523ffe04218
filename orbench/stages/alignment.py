"""Stage 4 of OR-Bench: query the target model and flag refusals.

In:  --input_file: a CSV, TSV, JSON, JSONL or parquet file with a `prompt` column
     (`category`, or XSTest's `type`, is carried along); or a published set by short name:
     or-bench-hard-1k and or-bench-toxic read the copies bundled with orbench (offline),
     or-bench-80k the Hugging Face Hub; or hf://datasets/OWNER/NAME[@REV]/FILE.
Out: ./final_{model}_results/{model}_merged_{input}.csv with columns
     prompt, is_rejected, refusal_score, response, category
     (+ reasoning, when some reply came with thinking: a thinking model's deliberation, inline
     <think> or reasoning_content, kept apart; response holds the reply alone)
     (--merge_result=False or --no_merge_result: {model}_rejected_{input}.csv and
     {model}_accepted_{input}.csv, and {model}_unscored_{input}.csv if any reply was empty
     or filtered);
     failed requests in {model}_failed_{input}.csv (prompt, error, category), never counted;
     run settings and counts in {model}_merged_{input}.run.json.
Request: one user message, no system prompt, temperature 0.0, max_tokens 1000 (all options);
OpenAI's reasoning models are sent max_completion_tokens and no temperature, as they take
them, and --reasoning_effort when given (docs/models_that_think.md).
is_rejected: True/False from refusal detection: `scored` by default (our rules and a small
learned scorer; it also writes refusal_score, the calibrated probability of a refusal, in
[0, 1]); --rules=generic for our rules alone, --rules=family for the original's keyword rules
of the model's family (from the registry, or guessed from the model id), or --rules=gpt-4 etc.
by name (these leave refusal_score empty). `empty` / `filtered` mark replies with nothing to
score; `cut_in_thinking` a reply the token cap stopped inside its thinking, before any reply
(a larger --max_tokens gives one). None of them is a refusal or an answer.
Default model: `local`, the embedded SmolLM2-135M-Instruct. Re-running the same command
resumes: finished rows are kept, failed rows are retried.

Batch mode: --batch sends what the cache cannot answer through the endpoint's Batch API and
finishes from the cache; --batch_export DIR / --batch_import FILE... do the same through
`vllm run-batch` (docs/batch.md).

Example (from alignment_checker/; installed: orbench query --model=... --input_file=...):
  python gpt3_4_alignment_checker.py --model=gpt-3.5-turbo-0125 --input_file=../examples/sample_prompts.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..run.cli import add_split_flag, str2bool
from ..protocol.constants import (
    COL_CATEGORY, COL_ERROR, COL_IS_REJECTED, COL_PROMPT, COL_REASONING, COL_REFUSAL_SCORE, COL_RESPONSE, COL_TYPE,
)
from ..tables.hub import input_name
from ..tables.inputs import MAX_PROMPT_CHARS, key_function
from ..engine.jobs import Job, Outcome
from ..tables.naming import safe_name, sibling
from ..refusal import DEFAULT_RULES, FAMILIES  # the checkers themselves load on first use (refusal/__init__.py)
from ..tables.resume import present_columns, write_atomic
from ..tables.runinfo import endpoint_info
from ..run.runner import run_stage
from ..run.spec import OutputPlan, Reply, StageResult, StageSpec, first_failure
from ..protocol.summary import rejection_summary
from ..tables.table_io import output_stem
from ..protocol.verdict import Verdict, VerdictKind, refused_in

COLUMNS = [COL_PROMPT, COL_IS_REJECTED, COL_REFUSAL_SCORE, COL_RESPONSE, COL_CATEGORY, COL_REASONING]
OPTIONAL = (COL_REASONING,)  # in the final file only when some reply had thinking
OTHER_LANGUAGE_CELL = Verdict(VerdictKind.OTHER_LANGUAGE).to_csv()
CUT_CELL = Verdict(VerdictKind.CUT_IN_THINKING).to_csv()
FAILED_COLUMNS = [COL_PROMPT, COL_ERROR, COL_CATEGORY]
KEY_COLUMNS = (COL_PROMPT, COL_CATEGORY)
INPUT_ALIASES = {COL_TYPE: COL_CATEGORY}  # XSTest's prompt file
# The run's counters (printed, and kept in .run.json) by verdict.
COUNTER = {VerdictKind.REFUSED: "rejected", VerdictKind.ANSWERED: "accepted",
           VerdictKind.EMPTY: "empty", VerdictKind.FILTERED: "filtered",
           VerdictKind.OTHER_LANGUAGE: "other_language", VerdictKind.CUT_IN_THINKING: "cut_in_thinking"}


_READ_KINDS = (VerdictKind.REFUSED, VerdictKind.ANSWERED, VerdictKind.OTHER_LANGUAGE)


def default_output(model: str, input_file: str) -> Path:
    name = safe_name(model)
    return Path(f"final_{name}_results") / f"{name}_merged_{output_stem(input_file)}.csv"


class Alignment(StageSpec):
    stage = "alignment_checker"
    script = "gpt3_4_alignment_checker.py"
    required_columns = (COL_PROMPT,)
    aliases = INPUT_ALIASES
    key_columns = KEY_COLUMNS
    max_chars_help = f"longer prompts are not sent and go to the failed file (default {MAX_PROMPT_CHARS})"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", default="local", help="target model: a registry name, PROVIDER/MODEL (e.g. vllm/meta-llama/Llama-3.1-8B-Instruct, "
                            "openai/gpt-4o) or a model id (default: local)")
        p.add_argument("--input_file", required=True,
                       help="the prompts: a CSV, TSV, JSON, JSONL or parquet file with a 'prompt' column ('category' or "
                            "'type' optional), hf://datasets/OWNER/NAME[@REV]/FILE, or a published set's short name: "
                            "or-bench-hard-1k and or-bench-toxic (bundled with orbench, read offline), or-bench-80k "
                            "(read from the Hugging Face Hub)")
        p.add_argument("--name", default=None,
                       help="the target's name in file names, settings and reports (default: --model); use it to tell "
                            "apart runs of one model with different settings, e.g. --name local-safety with --system_prompt")
        p.add_argument("--output_path", default=None,
                       help="merged output CSV (default: ./final_{name}_results/{name}_merged_{input}.csv)")
        p.add_argument("--merge_result", type=str2bool, default=True,
                       help="True: one merged file; False: {model}_rejected_... and {model}_accepted_... (default True)")
        add_split_flag(p)
        p.add_argument("--system_prompt", default=None,
                       help="system message sent before each prompt (default: none, as in the paper)")
        p.add_argument("--rules", default=DEFAULT_RULES, choices=FAMILIES + ("family",),
                       help=f"refusal detection for is_rejected: '{DEFAULT_RULES}' (default; rules and a learned "
                            "scorer, which also writes refusal_score; measured in docs/refusal/), 'generic' (our "
                            "rules alone), 'family' (the original's keyword rules for the model's family, from the "
                            "registry or guessed from the model id), or a family's rules by name")

    @property
    def name(self) -> str:
        return self.args.name or self.args.model

    @property
    def family(self) -> str:
        return self.ctx.clients[0].endpoint.family if self.args.rules == "family" else self.args.rules

    def output(self) -> OutputPlan:
        path = Path(self.args.output_path) if self.args.output_path else default_output(self.name, self.args.input_file)
        return OutputPlan(path, COLUMNS, sibling(path, "_merged_", "_failed_", "_failed"), FAILED_COLUMNS,
                          key_function(KEY_COLUMNS), optional_columns=OPTIONAL)

    def record(self) -> dict[str, Any]:
        from ..refusal import run_settings

        return {"model": self.name, **endpoint_info(self.ctx.clients[0]), "rules": self.family,
                **run_settings(self.family), "system_prompt": self.args.system_prompt,
                **self.io_record(self.args.input_file)}

    def progress_label(self) -> str:
        return f"stage 4 {self.name}"

    def requests(self, job: Job, attempt: int):
        system = [{"role": "system", "content": self.args.system_prompt}] if self.args.system_prompt else []
        return [self.request(system + [{"role": "user", "content": job.row[COL_PROMPT]}])]

    def parse(self, job: Job, replies: list[Reply], attempt: int):
        failed = first_failure(replies)
        if failed:
            return failed
        from ..refusal import stage4_verdict  # loaded once, by the first row (not by --help)

        res = replies[0]  # its text is the reply alone: the engine keeps the thinking apart
        if res.cut_in_thinking:  # no reply to read: the detector is never given the thinking
            verdict = Verdict(VerdictKind.CUT_IN_THINKING)
        else:
            verdict = stage4_verdict(res.text, self.family, res.finish_reason, prompt=job.row[COL_PROMPT])
        row = {COL_PROMPT: job.row[COL_PROMPT], COL_IS_REJECTED: verdict.to_csv(), COL_REFUSAL_SCORE: verdict.score_csv(),
               COL_RESPONSE: res.text or "", COL_CATEGORY: job.row.get(COL_CATEGORY, ""),
               COL_REASONING: res.reasoning or ""}
        counters = {COUNTER[verdict.kind]: 1}
        if verdict.kind in _READ_KINDS:  # per language: scored, or set aside (in .run.json)
            from ..refusal.language import reply_language

            scored = "set_aside" if verdict.kind is VerdictKind.OTHER_LANGUAGE else "scored"
            counters[f"language_{reply_language(res.text)}_{scored}"] = 1
        return Outcome(rows=[row], counters=counters)

    def failed_row(self, job: Job, error: str) -> dict[str, object]:
        return {COL_PROMPT: job.row[COL_PROMPT], COL_ERROR: error, COL_CATEGORY: job.row.get(COL_CATEGORY, "")}

    def finish(self, result: StageResult) -> None:
        if not self.args.merge_result:
            _split(self.output().path, result.rows)
        print(rejection_summary(result.rows, _verdict, failed=result.counts.failed,
                                title=f"{self.name} on {input_name(self.args.input_file)} ({self.family} rules):"))
        languages = stage4_languages(result.rows)
        if len(languages) > 1 or (languages and "en" not in languages):
            from ..refusal.language import languages_line

            print(languages_line(languages))
        foreign = sum(r.get(COL_IS_REJECTED) == OTHER_LANGUAGE_CELL for r in result.rows)
        if foreign:
            print(f"{foreign} response(s) mostly in a language the detector cannot read are unscored "
                  f"(is_rejected = {OTHER_LANGUAGE_CELL}): judge them with stage 5")
        cut = sum(r.get(COL_IS_REJECTED) == CUT_CELL for r in result.rows)
        if cut:
            print(cut_line(cut, len(result.rows), int(self.args.max_tokens)))


def stage4_languages(rows: list[dict[str, str]]) -> dict[str, dict[str, int]]:
    """Per language of the replies with something to read: scored (a refusal or an answer) or
    set aside (other_language)."""
    from ..refusal.language import language_counts

    return language_counts((r.get(COL_RESPONSE), r.get(COL_IS_REJECTED)) for r in rows)


def cut_line(cut: int, rows: int, max_tokens: int) -> str:
    """Stage 4's line about replies cut inside their thinking, with the fix."""
    return (f"{cut} of {rows} replies were cut inside their thinking at max_tokens {max_tokens}, before any reply "
            f"(is_rejected = {CUT_CELL}): unscored, never a refusal or an answer. Run again with a larger "
            f"--max_tokens (e.g. {max(8 * max_tokens, 8000)}) and another --output_path to give them room")


def _verdict(row: dict[str, str]) -> bool | None:
    return refused_in(row.get(COL_IS_REJECTED, ""))


def _split(merged: Path, rows: list[dict[str, str]]) -> None:
    """--merge_result=False: the original's rejected/accepted files (plus unscored, if any)."""
    groups: dict[str, list[dict[str, str]]] = {"_rejected_": [], "_accepted_": [], "_unscored_": []}
    for r in rows:
        v = _verdict(r)
        groups["_unscored_" if v is None else ("_rejected_" if v else "_accepted_")].append(r)
    columns = present_columns(COLUMNS, OPTIONAL, rows)
    for token, part in groups.items():
        if part or token != "_unscored_":
            write_atomic(sibling(merged, "_merged_", token, token.rstrip("_")), columns, part)
    merged.unlink()


def main(argv: Sequence[str] | None = None, doc: str | None = None, prog: str | None = None) -> int:
    return run_stage(Alignment, argv, doc or __doc__, prog)


if __name__ == "__main__":
    sys.exit(main())
