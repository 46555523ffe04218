"""`python -m orbench.evaluate_refusal`: kept where it always was; the command lives in
`orbench.refusal.evaluate`."""

from __future__ import annotations

import sys

from orbench.refusal.evaluate import *  # noqa: F401,F403
from orbench.refusal.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
