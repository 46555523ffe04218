"""The names of the refusal checkers, apart from the checkers themselves: a command's --help
(stage 4's --rules, `python -m orbench.evaluate_refusal`) reads them without compiling the
detector's patterns."""

from __future__ import annotations

from .families import FAMILY_RULES

GENERIC = "generic"
SCORED = "scored"
DEFAULT_RULES = SCORED  # stage 4's default
FAMILIES: tuple[str, ...] = (*FAMILY_RULES, GENERIC, SCORED)
