"""Stage 3 of OR-Bench: moderate prompts (or responses) with an LLM judge or an ensemble.

In:  --input_file_path CSV/parquet with `prompt` (and `response` for --column=response),
     `category` carried along; e.g. the rewriter's ../rewritter/harmful_prompts_rewrite.csv.
Out: ./{input stem}_moderation_merged_{moderator}_{column}.csv with columns
     prompt, [response,] category, is_toxic, moderation_result
     is_toxic is True, False, or `unparsed` when the choice cannot be read (never safe by default).
     --merge_result=False: ..._toxic_moderation_... and ..._non_toxic_moderation_... instead
     (and ..._unparsed_moderation_... if any).
     Failed requests: {stem}_moderation_failed_{moderator}_{column}.csv, with the error.
     Run settings and counts: the merged name with .run.json.
Ensemble: --moderator_model=gpt4,llama3,gemini-1.5 runs all moderators in one pass (file tag
gpt4+llama3+gemini-1.5) and adds toxic_votes, safe_votes and per-moderator
{name}_choice / {name}_is_toxic / {name}_moderation_result columns; is_toxic is decided by
--vote=majority (default), unanimous or any.
Defaults: --moderator_model=local, --column=prompt, temperature 0, max_tokens 1000.

Batch mode: --batch sends what the cache cannot answer through the endpoint's Batch API and
finishes from the cache; --batch_export DIR / --batch_import FILE... do the same through
`vllm run-batch` (README, "Batch mode").
Example: python moderate_only.py --moderator_model=gpt4 --input_file_path=../rewritter/harmful_prompts_rewrite.csv --column=prompt
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.moderate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
