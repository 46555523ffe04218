"""Stage 2 of OR-Bench: rewrite each toxic seed into 5 seemingly toxic but safe prompts.

In:  --toxic_seed_path: a stage-1 CSV with `prompt, category` (e.g.
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
`vllm run-batch` (README, "Batch mode").
Example: python mixtral_rewrite_only.py --toxic_seed_path=../toxic_prompt_generator/harmful_prompts.csv
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.rewrite import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
