"""The roles a sentence of a response can have, and the kinds of pivot after a decline.

Every language's grammar (`orbench.refusal.grammar`) sorts sentences into these same roles, so
that the structural features, and the weights learned on them, are shared across languages.
"""

from __future__ import annotations

# Roles of a sentence, in order of precedence when one sentence has several cues.
DECLINE = "decline"
JUDGES = "judges"
DISCLAIMS = "disclaims"
REFERS = "refers"
OFFERS = "offers"
AI = "ai"
REGRETS = "regrets"
SYMPATHY = "sympathy"
CAUTIONS = "cautions"
QUESTION = "question"
CONTENT = "content"
FILLER = "filler"  # too short to say anything: a heading, "Sure!"
ROLES: tuple[str, ...] = (DECLINE, JUDGES, DISCLAIMS, REFERS, OFFERS, AI, REGRETS, SYMPATHY, CAUTIONS, QUESTION,
                          CONTENT, FILLER)
_PRIORITY = {role: i for i, role in enumerate(ROLES)}
NON_ANSWER_ROLES = frozenset({REFERS, OFFERS, AI, REGRETS, SYMPATHY, CAUTIONS, QUESTION})

# Kinds of pivot after a decline.
PIVOT_CONTENT = "content"  # "however, here are ...", "that said, generally ..."
PIVOT_ALTERNATIVE = "alternative"  # "instead, ...", "I suggest ...", "let's talk about ..."
PIVOT_NONE = "none"
