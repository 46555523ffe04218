"""`python -m orbench.evaluate_refusal`: kept where it always was. The command lives in
`orbench.refusal.command`, the library in `orbench.refusal.evaluate` and
`orbench.refusal.loo`; their public names are importable from here too."""

from __future__ import annotations

import sys

from orbench.refusal.command import build_parser, main, run, run_leave_one_out  # noqa: F401
from orbench.refusal.evaluate import *  # noqa: F401,F403

if __name__ == "__main__":
    sys.exit(main())
