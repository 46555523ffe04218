"""Stage 1 of OR-Bench: generate toxic seed prompts for one category.

The original script's name and flags. The same command, installed: `orbench generate`.
`--help` prints the full description (orbench/stages/generate.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.generate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
