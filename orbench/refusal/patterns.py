"""How the cue patterns are built: alternations whose branches share their literal openings.

Each branch of an English pattern starts with a literal letter after a leading space (the
text is rebuilt as " word word ... "), and branches that start with the same letters share
them (a trie of their literal openings): the regular-expression engine then rejects most
word starts after a character or two instead of once per branch. A branch that opens with a
group of alternatives ("(?:this|the) answer") is written out first, one branch per
alternative, so that it joins the trie: one branch left out of it would make the engine try
every branch at every word (the English cues were so until 2026-11; the cue pass took 2.6 s
per 80,000 replies, 1.1 s after). Patterns of languages
written without spaces between words (Chinese, Japanese), or whose cues sit inside a word
(Korean endings), are built the same way without the leading space.
"""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple

_META = frozenset("\\()[]{}?*+|.^$")  # characters that are not literal in a pattern


def _literal_start(branch: str) -> bool:
    """Whether a pattern starts with one literal character (not repeated)."""
    return bool(branch) and branch[0] not in _META and (len(branch) < 2 or branch[1] not in "?*+{")


def _factored(branches: list[str], opened: bool = False) -> str:
    """The alternation of `branches` (patterns without a top-level "|", in order of
    preference) with their shared literal openings factored out.

    It matches what the plain alternation matches, preferring the same branch: branches
    that start with different literal characters cannot both match at one place, so
    only the order of those that start alike matters, and that order is kept. A branch
    that opens with a group of alternatives is first written out as one branch per
    alternative (`_opened`); one that still does not start with a literal character
    stays where it is, and the runs of branches before and after it are factored apart."""
    if not opened:
        branches = [b for branch in branches for b in _opened(branch)]
    if len(branches) == 1:
        return branches[0]
    runs: list[list[str]] = []
    for branch in branches:
        if runs and _literal_start(branch) and _literal_start(runs[-1][0]):
            runs[-1].append(branch)
        else:
            runs.append([branch])
    parts = [_factored_run(run) if _literal_start(run[0]) else run[0] for run in runs]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _factored_run(branches: list[str]) -> str:
    """`_factored` for branches that all start with a literal character."""
    if len(branches) == 1:
        return branches[0]
    by_first: dict[str, list[str]] = {}
    for branch in branches:
        by_first.setdefault(branch[0], []).append(branch[1:])
    parts = [re.escape(c) + _factored(rest, True) for c, rest in by_first.items()]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


_MAX_OPENED = 64  # a branch is written out as at most this many


def _opened(branch: str) -> list[str]:
    """A branch that opens with a non-capturing group of alternatives, written out as one
    branch per alternative, in the order the engine tries them: "(?:this|the) answer" is
    "this answer|the answer", and "(?:sincerely )?sorry" is "sincerely sorry|sorry" (a
    greedy "?" tries the group first). Any other branch, or one that would become more than
    _MAX_OPENED, is returned as it is."""
    if not branch.startswith("(?:"):
        return [branch]
    end = _group_end(branch)
    if end < 0:
        return [branch]
    optional = branch[end:end + 1] == "?" and branch[end + 1:end + 2] not in ("?", "+")
    if branch[end:end + 1] in ("*", "+", "{", "?") and not optional:
        return [branch]
    rest = branch[end + 1:] if optional else branch[end:]
    alternatives = [alt + rest for alt in _alternatives(branch[3:end - 1])] + ([rest] if optional else [])
    out = [b for alt in alternatives for b in _opened(alt)]
    return out if len(out) <= _MAX_OPENED and all(out) else [branch]


def _group_end(branch: str) -> int:
    """Where the group that opens `branch` ends (just past its ")"), or -1."""
    return next((i + 1 for i, _, depth in _syntax(branch) if depth == 0), -1)


def _alternatives(branch: str) -> list[str]:
    """A branch split at its top-level "|" (outside groups and character classes): factoring
    needs each alternative on its own, or "我是X|我没有Y" beside "我不是Z" would become
    "我(?:是X|我没有Y|不是Z)"."""
    cuts = [i for i, c, depth in _syntax(branch) if c == "|" and depth == 0]
    return [branch[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(branch)])]


def _syntax(branch: str) -> Iterator[tuple[int, str, int]]:
    """Each character of a pattern outside escapes and character classes, where it is, and
    how many groups are open after it."""
    depth, i, in_class = 0, 0, False
    while i < len(branch):
        c = branch[i]
        if c == "\\":
            i += 1
        elif in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        else:
            depth += (c == "(") - (c == ")")
            yield i, c, depth
        i += 1


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
    # matched where a disclaimer's word ends: the word only describes another object, one the request
    # asked for ("부정적인 감정을 조장하는 내용", "互联网上骚扰他人的方法", "診断書")
    disclaimed_thing: str = r"(?!)"
    # a lead-in to a list of what the model offers to do instead ("我可以帮你："): the list offers, it gives nothing
    offered_list: str = r"(?!)"
    # a lead-in to a list of where to look it up ("可以通过以下途径查询："): the list refers
    referred_list: str = r"(?!)"
    # in a declining clause, an act of producing what was asked ("I can't write ...", "I won't help ..."):
    # a reply that opens so declines the request itself, not the model's nature (`structure.declines_the_request`)
    request_act: str = r"(?!)"
