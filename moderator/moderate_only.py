"""Stage 3 of OR-Bench: moderate prompts (or responses) with an LLM judge or an ensemble.

The original script's name and flags. The same command, installed: `orbench moderate`.
`--help` prints the full description (orbench/stages/moderate.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.moderate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
