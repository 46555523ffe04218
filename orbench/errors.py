"""The two kinds of error: a user's mistake (one line, exit 2) and everything else (a bug)."""

from __future__ import annotations

import sys
from typing import Callable, Sequence


class UserError(Exception):
    """A mistake the user can fix: bad input, unknown model, missing key.

    The CLI wrapper prints ``str(err)`` on one line and exits with code 2.
    """

    exit_code = 2


class FatalEndpointError(UserError):
    """The endpoint refused us in a way retrying cannot fix (401/403/404, quota).

    The whole run stops: every further request would fail the same way.
    """


class EarlyExit(Exception):
    """The run did what was asked and stops before the stage's normal path (e.g.
    ``--batch_export`` wrote the batch files). The CLI prints the message and exits 0."""

    exit_code = 0


def warn(msg: str) -> None:
    """A warning on stderr: the run goes on."""
    print(f"warning: {msg}", file=sys.stderr)


def run_command(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a command's body; a user's mistake becomes one line on stderr and its exit code."""
    try:
        return main(argv)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
