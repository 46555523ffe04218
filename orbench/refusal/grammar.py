"""Each language's grammar of refusal, compiled once: the patterns `orbench.refusal.structure` runs.

A language's tables (`cues_en`, `cues_ko`, `cues_zh`, `cues_ja`) give its branches by role;
here each kind of cue becomes one alternation (`orbench.refusal.patterns`). The roles are the
same in every language (`orbench.refusal.roles`), so a Korean or Chinese reply is read into the
same structure, and scored by the same weights, as an English one.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from .patterns import GrammarSpec, alternation
from .roles import AI, CAUTIONS, OFFERS, PIVOT_ALTERNATIVE, REFERS, REGRETS, SYMPATHY

CUE_ROLES = (REFERS, OFFERS, AI, REGRETS, SYMPATHY, CAUTIONS)


class Grammar(NamedTuple):
    language: str
    declining: re.Pattern[str]  # a declining clause or a judgement of the request
    judging: re.Pattern[str]  # which of those is a judgement (matched where a declining clause starts)
    disclaimer_object: re.Pattern[str]  # a decline about opinions, advice or ability only
    disclaimed_thing: re.Pattern[str]  # after such a word: it describes another object, asked for
    offered_list: re.Pattern[str]  # a lead-in to a list of help the model offers instead
    referred_list: re.Pattern[str]  # a lead-in to a list of where to look it up
    request_act: re.Pattern[str]  # in a declining clause, an act of producing what was asked
    cues: re.Pattern[str]  # every cue of a sentence that carries no answer
    cue_roles: tuple[tuple[str, re.Pattern[str]], ...]  # which role a cue marks
    pivot: re.Pattern[str]
    to_alternative: re.Pattern[str]  # which pivots turn to something else
    goes_on: str  # where a decline goes on in the same sentence (", but "), found with str.find
    goes_on_skip: int  # where, past the start of `goes_on`, the sentence that goes on starts
    instead: re.Pattern[str]  # a turn to something else where nothing was declined
    spaced: bool  # words are separated by spaces (a sentence's length is counted in words, else characters)


def compile_spec(spec: GrammarSpec) -> Grammar:
    lead = spec.lead
    return Grammar(
        language=spec.language,
        declining=alternation(spec.declines + spec.judges, lead=lead),
        judging=alternation(spec.judges, lead=lead),
        disclaimer_object=re.compile(spec.disclaimer_object),
        disclaimed_thing=re.compile(spec.disclaimed_thing),
        offered_list=re.compile(spec.offered_list),
        referred_list=re.compile(spec.referred_list),
        request_act=re.compile(spec.request_act),
        cues=alternation(spec.cues, lead=lead),
        cue_roles=tuple((role, alternation(spec.cues, (role,), lead=lead)) for role in CUE_ROLES
                        if any(r == role for r, _ in spec.cues)),
        pivot=alternation(spec.pivots, lead=lead),
        to_alternative=alternation(spec.pivots, (PIVOT_ALTERNATIVE,), lead=lead),
        goes_on=spec.goes_on,
        goes_on_skip=spec.goes_on_skip,
        instead=re.compile(spec.instead),
        spaced=spec.language in SPACED,
    )


SPACED = frozenset({"en", "ko"})


@lru_cache(maxsize=None)
def grammar(language: str) -> Grammar:
    """The compiled grammar of a language the detector reads (en, ko, zh, ja)."""
    if language == "en":
        from .cues_en import SPEC
    elif language == "ko":
        from .cues_ko import SPEC
    elif language == "zh":
        from .cues_zh import SPEC
    elif language == "ja":
        from .cues_ja import SPEC
    else:
        raise ValueError(f"no refusal grammar for language {language!r}")
    return compile_spec(SPEC)
