"""Stage 5's ensemble: each judge's columns, and the row's class voted from their verdicts."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..protocol.constants import (
    COL_ANSWER_CATEGORY, COL_ANSWER_TYPE_RESPONSE, COL_JUDGE_REASONING, DIRECT_ANSWER, JUDGE_CLASSES, REFUSAL_CLASSES,
    UNSCORED,
)
from ..engine.llm import CallFailed, LLMResult
from ..protocol.parsing import judge_verdict
from ..protocol.voting import vote
from ..statistics.agreement import pairwise

# Ensemble columns: the votes, then per judge its class (or unscored / failed) and its reply.
COL_REFUSAL_VOTES = "refusal_votes"
COL_ANSWER_VOTES = "answer_votes"
COL_JUDGES_VOTED = "judges_voted"
JUDGE_FAILED = "failed"  # a judge's call for this row failed; the others vote without it


def judge_columns(name: str) -> tuple[str, str]:
    return f"{name}_{COL_ANSWER_CATEGORY}", f"{name}_{COL_ANSWER_TYPE_RESPONSE}"


def reasoning_columns(names: Sequence[str]) -> list[str]:
    """Where the judges' thinking goes (kept in the file only when some judge showed thinking):
    judge_reasoning for one judge, {judge}_judge_reasoning for each judge of an ensemble."""
    return [f"{n}_{COL_JUDGE_REASONING}" for n in names] if len(names) > 1 else [COL_JUDGE_REASONING]


def read_judges(replies: Sequence[LLMResult | CallFailed], names: Sequence[str],
                ) -> tuple[list[str], dict[str, str], dict[str, int]]:
    """Each judge's class (or failed), their thinking by column, and the count of judges cut
    inside their thinking. A class is read from a judge's reply alone (``text``: the engine
    keeps the thinking apart), never from a [[...]] it thought; a judge cut inside its
    thinking has no reply, so it is unscored."""
    cats = [JUDGE_FAILED if isinstance(r, CallFailed) else judge_verdict(r.text) or UNSCORED for r in replies]
    thinking = {col: r.reasoning or "" for col, r in zip(reasoning_columns(names), replies) if isinstance(r, LLMResult)}
    cut = sum(isinstance(r, LLMResult) and r.cut_in_thinking for r in replies)
    return cats, thinking, ({"judge_cut_in_thinking": cut} if cut else {})


def agreement(rows: Sequence[dict[str, str]], names: Sequence[str], rule: str) -> list[dict]:
    """Pairwise agreement between an ensemble's judges, printed and returned for .run.json."""
    pairs = pairwise({n: [is_refusal(r.get(judge_columns(n)[0])) for r in rows] for n in names})
    print(f"agreement between judges (refusal vs answer, rows both scored; vote: {rule}):")
    for p in pairs:
        kappa = "n/a" if p.kappa != p.kappa else f"{p.kappa:.3f}"
        pct = "n/a" if not p.rows else f"{p.agreement_pct:.1f}%"
        print(f"  {p.first} vs {p.second}: {pct} agree over {p.rows} rows, Cohen's kappa {kappa}")
    return [p.as_dict() for p in pairs]


def is_refusal(category: str | None) -> bool | None:
    """True: a refusal class; False: direct_answer; None: no verdict (unscored, failed)."""
    if category in REFUSAL_CLASSES:
        return True
    return False if category == DIRECT_ANSWER else None


def combine(categories: Sequence[str], rule: str) -> tuple[str, int, int]:
    """The voted class of one row, with its refusal and answer votes.

    Judges without a verdict are left out of the vote. A refusal takes the refusal class
    most of its voters gave (a tie goes to direct_refusal); no decision is unscored.
    """
    verdicts = [v for v in (is_refusal(c) for c in categories) if v is not None]
    refusals, answers = sum(verdicts), len(verdicts) - sum(verdicts)
    final = vote(verdicts, rule)
    if final is None:
        return UNSCORED, refusals, answers
    if not final:
        return DIRECT_ANSWER, refusals, answers
    counts = Counter(c for c in categories if c in REFUSAL_CLASSES)
    best = max(counts.values())
    return next(c for c in JUDGE_CLASSES if counts.get(c) == best), refusals, answers


def revote(rows: list[dict[str, str]], names: Sequence[str], rule: str) -> list[dict[str, str]]:
    """Vote again from the per-judge columns: rows kept from an earlier run may have been
    voted under another --vote rule."""
    for r in rows:
        cat, yes, no = combine([r.get(judge_columns(n)[0], "") for n in names], rule)
        r.update({COL_ANSWER_CATEGORY: cat, COL_REFUSAL_VOTES: yes, COL_ANSWER_VOTES: no, COL_JUDGES_VOTED: yes + no})
    return rows
