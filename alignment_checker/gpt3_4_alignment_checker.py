"""Stage 4 of OR-Bench: query the target model and flag refusals.

The original script's name and flags. The same command, installed: `orbench query`.
`--help` prints the full description (orbench/stages/alignment.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.alignment import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
