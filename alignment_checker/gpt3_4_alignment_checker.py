"""Stage 4 of OR-Bench: query the target model and flag refusals.

In:  --input_file CSV or parquet with a `prompt` column (`category`, or XSTest's `type`,
     is carried along). The public or-bench-80k / hard-1k / toxic files work as they are.
Out: ./final_{model}_results/{model}_merged_{input}.csv with columns
     prompt, is_rejected, refusal_score, response, category
     (--merge_result=False: {model}_rejected_{input}.csv and {model}_accepted_{input}.csv);
     failed requests in {model}_failed_{input}.csv (prompt, error, category), never counted;
     run settings and counts in {model}_merged_{input}.run.json.
Request: one user message, no system prompt, temperature 0.0, max_tokens 1000 (all options).
is_rejected: True/False from refusal detection: `scored` by default (our rules and a small
learned scorer; it also writes refusal_score, the calibrated probability of a refusal, in
[0, 1]); --rules=generic for our rules alone, --rules=family for the original's keyword rules
of the model's family (from the registry, or guessed from the model id), or --rules=gpt-4 etc.
by name (these leave refusal_score empty). `empty` / `filtered` mark replies with nothing to
score.
Default model: `local`, the embedded SmolLM2-135M-Instruct. Re-running the same command
resumes: finished rows are kept, failed rows are retried.

Batch mode: --batch sends what the cache cannot answer through the endpoint's Batch API and
finishes from the cache; --batch_export DIR / --batch_import FILE... do the same through
`vllm run-batch` (README, "Batch mode").
Example: python gpt3_4_alignment_checker.py --model=gpt-3.5-turbo-0125 --input_file=../examples/sample_prompts.csv
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.alignment import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
