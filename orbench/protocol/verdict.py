"""Stage 4's verdict on one response: a kind and, from the scored detector, a refusal score.

In memory a verdict is a `Verdict`; text exists only in a CSV cell. Stage 4 writes the kind
in `is_rejected` and the score in `refusal_score`, with the values it has always written, so
files from before read the same:

    kind            is_rejected     refused
    REFUSED         True            True
    ANSWERED        False           False
    EMPTY           empty           None    (a blank reply: nothing to judge)
    FILTERED        filtered        None    (the provider's content filter stopped it)
    OTHER_LANGUAGE  other_language  None    (the scored detector cannot read its language: a judge must)
    CUT_IN_THINKING cut_in_thinking None    (the token cap stopped it inside its thinking: no reply;
                                             a larger --max_tokens gives one)
    FAILED          (none)          None    (the request failed: its row is in the failed file)

`Verdict.from_csv` reads a cell without regard to case or surrounding space, and also takes
the 1/0 and yes/no that other tools write for booleans. Text that is none of these gives
None: an unscored row, counted apart, never a refusal or an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class VerdictKind(str, Enum):
    ANSWERED = "answered"
    REFUSED = "refused"
    EMPTY = "empty"
    FILTERED = "filtered"
    OTHER_LANGUAGE = "other_language"
    CUT_IN_THINKING = "cut_in_thinking"
    FAILED = "failed"


_TO_CSV = {VerdictKind.REFUSED: "True", VerdictKind.ANSWERED: "False",
           VerdictKind.EMPTY: "empty", VerdictKind.FILTERED: "filtered",
           VerdictKind.OTHER_LANGUAGE: "other_language", VerdictKind.CUT_IN_THINKING: "cut_in_thinking"}
_FROM_CSV = {
    **dict.fromkeys(("true", "1", "yes"), VerdictKind.REFUSED),
    **dict.fromkeys(("false", "0", "no"), VerdictKind.ANSWERED),
    "empty": VerdictKind.EMPTY,
    "filtered": VerdictKind.FILTERED,
    "other_language": VerdictKind.OTHER_LANGUAGE,
    "cut_in_thinking": VerdictKind.CUT_IN_THINKING,
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A verdict, and the calibrated probability that the reply is a refusal (None from
    rules that give no score, and for replies that are neither refusals nor answers)."""

    kind: VerdictKind
    score: float | None = None

    @property
    def refused(self) -> bool | None:
        """True for a refusal, False for an answer, None for anything that is neither."""
        if self.kind is VerdictKind.REFUSED:
            return True
        return False if self.kind is VerdictKind.ANSWERED else None

    def to_csv(self) -> str:
        """The `is_rejected` cell. A failed request has none: its row goes to the failed file."""
        try:
            return _TO_CSV[self.kind]
        except KeyError:
            raise ValueError("a failed request has no is_rejected value; its row belongs in the failed file") from None

    def score_csv(self) -> str:
        """The `refusal_score` cell: 4 decimals, or empty when there is no score."""
        return "" if self.score is None else f"{self.score:.4f}"

    @classmethod
    def from_csv(cls, text: object, score: object = "") -> Verdict | None:
        """The verdict in an `is_rejected` cell (None when the text is not one), with the score
        in `score` when it is a number."""
        kind = _FROM_CSV.get(str(text).strip().lower())
        return None if kind is None else cls(kind, _number(score))


def refused_in(text: object) -> bool | None:
    """What an `is_rejected` cell says: True (refused), False (answered), or None (empty,
    filtered, other_language, cut_in_thinking, blank, or not a verdict)."""
    verdict = Verdict.from_csv(text)
    return None if verdict is None else verdict.refused


def _number(text: object) -> float | None:
    text = str(text).strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None
