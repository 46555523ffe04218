"""Stage 5 of OR-Bench: an LLM judge labels each response an answer or a refusal.

The original script's name and flags. The same command, installed: `orbench judge`.
`--help` prints the full description (orbench/stages/check_response.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.check_response import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
