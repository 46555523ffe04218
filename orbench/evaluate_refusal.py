"""`python -m orbench.evaluate_refusal`: kept where it always was. The command lives in
`orbench.refusal.command`, the library in `orbench.refusal.evaluate` and
`orbench.refusal.loo`; their public names are importable from here too."""

from __future__ import annotations

import sys
from typing import Any

from orbench.refusal.command import build_parser, main, run, run_leave_one_out  # noqa: F401


def __getattr__(name: str) -> Any:
    """The library's names (orbench.refusal.evaluate), imported on first use so that --help stays light."""
    if name.startswith("__"):  # e.g. the import system asking for __path__: not the library's
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from orbench.refusal import evaluate

    try:
        return getattr(evaluate, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

if __name__ == "__main__":
    sys.exit(main())
