"""Combining the yes/no verdicts of several LLM judges (stage-3 moderators, stage-5 judges)."""

from __future__ import annotations

from typing import Sequence

VOTES = ("majority", "unanimous", "any")


def vote(verdicts: Sequence[bool | None], rule: str) -> bool | None:
    """Combine verdicts (True = yes, False = no, None = no readable verdict) by a rule.

    None votes count toward neither side but stay in the count, so a tie or too many
    unreadable replies leave the result undecided (None) rather than "no". A caller that
    wants unreadable votes left out altogether passes only the readable ones. No votes at
    all: None.
    """
    n = len(verdicts)
    if n == 0:
        return None
    yes = sum(v is True for v in verdicts)
    no = sum(v is False for v in verdicts)
    if rule == "majority":
        return True if yes * 2 > n else False if no * 2 > n else None
    if rule == "unanimous":
        return True if yes == n else False if no >= 1 else None
    if rule == "any":
        return True if yes >= 1 else False if no == n else None
    raise ValueError(rule)
