"""Build OR-Bench's three prompt sets (safe 80K-style, toxic, hard) from stage outputs.

In:  --rewrite_moderation: stage-3 files on the rewrites; --toxic_moderation: stage-3 files
     on the toxic pool; --hard_from: stage-4 (or stage-5) results of k or more models on the
     safe set (--k, default 3).
Out: --output_dir/or-bench-80k.csv, or-bench-toxic.csv, or-bench-hard-1k.csv (prompt, category),
     with per-category counts printed and in datasets.run.json.
Run `python build_datasets.py --help` for every option; the rules are in orbench/stages/datasets.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run from a clone without installing

from orbench.stages.datasets import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())  # --help shows the full rules from orbench.stages.datasets
