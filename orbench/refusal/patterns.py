"""How the cue patterns are built: alternations whose branches share their literal openings.

Each branch of an English pattern starts with a literal letter after a leading space (the
text is rebuilt as " word word ... "), and branches that start with the same letters share
them (a trie of their literal openings): the regular-expression engine then rejects most
word starts after a character or two instead of once per branch. Patterns of languages
written without spaces between words (Chinese, Japanese), or whose cues sit inside a word
(Korean endings), are built the same way without the leading space.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_META = frozenset("\\()[]{}?*+|.^$")  # characters that are not literal in a pattern


def _literal_start(branch: str) -> bool:
    """Whether a pattern starts with one literal character (not repeated)."""
    return bool(branch) and branch[0] not in _META and (len(branch) < 2 or branch[1] not in "?*+{")


def _factored(branches: list[str]) -> str:
    """The alternation of `branches` (patterns without a top-level "|", in order of
    preference) with their shared literal openings factored out.

    It matches what the plain alternation matches, preferring the same branch: branches
    that start with different literal characters cannot both match at one place, so
    only the order of those that start alike matters, and that order is kept. A group
    where some branch does not start with a literal character is left as it is."""
    if len(branches) == 1:
        return branches[0]
    if not all(map(_literal_start, branches)):
        return "(?:" + "|".join(branches) + ")"
    by_first: dict[str, list[str]] = {}
    for branch in branches:
        by_first.setdefault(branch[0], []).append(branch[1:])
    parts = [re.escape(c) + _factored(rest) for c, rest in by_first.items()]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"



def _alternatives(branch: str) -> list[str]:
    """A branch split at its top-level "|" (outside groups and character classes): factoring
    needs each alternative on its own, or "我是X|我没有Y" beside "我不是Z" would become
    "我(?:是X|我没有Y|不是Z)"."""
    out, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(branch):
        c = branch[i]
        if c == "\\":
            i += 1
        elif in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(branch[start:i])
            start = i + 1
        i += 1
    return out + [branch[start:]]


def alternation(branches: list[tuple[str, str]], roles: tuple[str, ...] | None = None,
                lead: str = " ") -> re.Pattern[str]:
    """One pattern over the branches (role, pattern) of the given roles (all by default),
    each starting with `lead` (a space for English: every word starts after one)."""
    chosen = [alt for role, branch in branches if roles is None or role in roles for alt in _alternatives(branch)]
    return re.compile(lead + _factored(chosen))


def each(starts: str, tail: str) -> list[str]:
    """One branch per start ('_' stands for a space inside one)."""
    return [start.replace("_", " ") + tail for start in starts.split()]


class GrammarSpec(NamedTuple):
    """One language's grammar of refusal, as branches (role, pattern): compiled by `orbench.refusal.grammar`."""

    language: str
    declines: list[tuple[str, str]]  # a declining clause: the model turns the request down
    judges: list[tuple[str, str]]  # a judgement of the request with no subject ("it is not appropriate to ...")
    disclaimer_object: str  # what a decline that only disclaims is about: opinions, advice, ability
    cues: list[tuple[str, str]]  # sentences that carry no answer: refers, offers, ai, regrets, sympathy, cautions
    pivots: list[tuple[str, str]]  # after a decline: to content, or to an alternative
    goes_on: str  # where a decline or a preamble goes on in the same sentence (", but ")
    lead: str  # what every branch starts with: a space where words are spaced and cues start words
    goes_on_skip: int = 1  # where, past the start of `goes_on`, the sentence that goes on starts
    instead: str = r"(?!)"  # a turn to something else in a reply that never declines ("Instead, ...")
