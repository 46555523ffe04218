"""Stage 2 of OR-Bench: rewrite each toxic seed into 5 seemingly toxic but safe prompts.

The original script's name and flags. The same command, installed: `orbench rewrite`.
`--help` prints the full description (orbench/stages/rewrite.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.rewrite import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
