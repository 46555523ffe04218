"""Stage 1 of OR-Bench: generate toxic seed prompts for one category.

In:  --category, one of: hate, self-harm, sexual, violence, harassment, harmful, illegal,
     unethical, privacy, deception (anything else is refused).
Out: ./{category}_prompts.csv (or --output_path) with columns prompt, category:
     --num_toxic_prompts unique prompts (default 2000), exact duplicates dropped across the run.
     Run settings and counts: {category}_prompts.run.json.
How: each call asks the generator for a batch of up to 20 prompts wrapped in [[ ]]; the last
batch asks only for what is still needed. Temperature 1.0, max_tokens 2000. Each call has a
sample number (sent as the request's seed, and part of the cache key), so a re-run with the
cache replays the same batches. Default model: local (the paper used Mixtral-8x7B).
Exit code 1 if the model stops producing new prompts before the target is reached.

Example: python generate_toxic_promt_from_category.py --category=harmful
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.generate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
