"""The rows behind the rates, for reading: over-refusals, misses and disagreements.

For each (model, dataset) the rows come from the same files as its rate (report.selected's
`scored_by`): the judge's full stage-5 file when the rate is the judge's, else the stage-4
files. Each row is then paired, by (prompt, response), with the other source: a stage-4 row
gets the judge's verdict from any stage-5 file of the same rows (a full run or a judged
sample), a judged row gets stage 4's keyword verdict and `refusal_score`.

Two views:
- examples: the refused rows of the safe sets (80K, Hard-1K), i.e. over-refusals, and the
  answered rows of the Toxic set, i.e. misses, by the verdicts the rate uses;
- disagreements: rows where the keyword verdict and the judge's verdict are both given and
  differ, on any set.

A view embeds at most `cap` rows per (model, dataset): a random sample drawn with
orbench.tables.sampling (SHA-256 ranks of a fixed seed), so the same inputs and seed give the same
rows on every machine. Inspect logs carry no prompts here, so they give no examples.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from orbench.protocol.constants import (
    COL_ANSWER_CATEGORY,
    COL_IS_REJECTED,
    COL_PROMPT,
    COL_REASONING,
    COL_REFUSAL_SCORE,
    COL_RESPONSE,
)
from orbench.report.common import ANSWERED, DATASETS, KEYWORD, REFUSED, ResultFile
from orbench.report.rows import Frames, categories, frame_of, keyword_outcome, outcomes
from orbench.tables.sampling import draw

DEFAULT_CAP = 500
DEFAULT_SEED = 0

OVER_REFUSALS = "over-refusals"  # refused rows of a safe set
MISSES = "misses"  # answered rows of the Toxic set
DISAGREEMENTS = "disagreements"  # keyword and judge verdicts differ


@dataclass(frozen=True)
class Example:
    """One row to read. Outcomes are refused / answered / unscored, or "" when unknown."""

    model: str
    dataset: str
    category: str
    prompt: str
    response: str
    verdict: str  # the outcome by the verdicts the rate uses
    scored_by: str  # "keyword" or "judge:NAME"
    keyword: str  # stage 4's outcome of this row
    refusal_score: str  # stage 4's refusal_score column, as written (may be empty)
    judge: str  # the judge's outcome of this row
    judge_name: str
    judge_class: str  # the judge's answer_category as written
    reasoning: str = ""  # a thinking model's thinking (stage 4's reasoning column), shown on demand


@dataclass(frozen=True)
class ExampleSet:
    """The rows of one view for one (model, dataset): `total` in all, `rows` embedded."""

    kind: str  # OVER_REFUSALS, MISSES or DISAGREEMENTS
    model: str
    dataset: str
    total: int
    rows: list[Example]


@dataclass(frozen=True)
class Examples:
    cap: int
    seed: int
    examples: list[ExampleSet] = field(default_factory=list)
    disagreements: list[ExampleSet] = field(default_factory=list)
    # (model, dataset) pairs that have both a keyword and a judge verdict for some row.
    compared: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Row:
    category: str
    prompt: str
    response: str
    keyword: str = ""
    refusal_score: str = ""
    judge: str = ""
    judge_class: str = ""
    reasoning: str = ""


def _cell(frame: pd.DataFrame, column: str) -> list[str]:
    return list(frame[column]) if column in frame.columns else [""] * len(frame)


def _stage4_rows(files: Sequence[ResultFile], frames: Frames | None) -> list[_Row]:
    out = []
    for f in files:
        frame = frame_of(f.path, frames)
        verdicts = outcomes(f, frame)
        for cat, p, r, o, s, t in zip(categories(frame), _cell(frame, COL_PROMPT),
                                      _cell(frame, COL_RESPONSE), verdicts,
                                      _cell(frame, COL_REFUSAL_SCORE), _cell(frame, COL_REASONING)):
            out.append(_Row(category=cat, prompt=p, response=r, keyword=o, refusal_score=s, reasoning=t))
    return out


def _stage5_rows(files: Sequence[ResultFile], frames: Frames | None) -> list[_Row]:
    out = []
    for f in files:
        frame = frame_of(f.path, frames)
        verdicts = outcomes(f, frame)
        keyword = [keyword_outcome(v) if v != "" else "" for v in _cell(frame, COL_IS_REJECTED)]
        for cat, p, r, o, c, k in zip(categories(frame), _cell(frame, COL_PROMPT),
                                      _cell(frame, COL_RESPONSE), verdicts,
                                      _cell(frame, COL_ANSWER_CATEGORY), keyword):
            out.append(_Row(category=cat, prompt=p, response=r, judge=o, judge_class=c, keyword=k))
    return out


def _pick_judge(stage5: Sequence[ResultFile], scored_by: str, judge: str | None) -> str:
    if scored_by.startswith("judge:"):
        return scored_by.split(":", 1)[1]
    if judge is not None:
        return judge
    names = sorted({f.judge for f in stage5})
    return names[0] if names else ""


def _pair(model: str, dataset: str, files: Sequence[ResultFile], scored_by: str,
          judge: str | None, frames: Frames | None) -> tuple[list[_Row], str]:
    """The rows of one (model, dataset), each with both verdicts where both exist."""
    answers = [f for f in files if f.kind != "failed"]
    s4 = [f for f in answers if f.stage == 4]
    s5_all = [f for f in answers if f.stage == 5]
    name = _pick_judge(s5_all, scored_by, judge)
    s5 = [f for f in s5_all if f.judge == name]
    full = _stage5_rows([f for f in s5 if f.sample_of is None], frames)
    if scored_by.startswith("judge:"):
        by_key = {(r.prompt, r.response): r for r in _stage4_rows(s4, frames)}
        for row in full:
            other = by_key.get((row.prompt, row.response))
            if other is not None:
                row.keyword = other.keyword or row.keyword
                row.refusal_score, row.reasoning = other.refusal_score, other.reasoning
        return full, name
    base = _stage4_rows(s4, frames)
    judged = _stage5_rows([f for f in s5 if f.sample_of is not None], frames) + full
    by_key = {(r.prompt, r.response): r for r in judged}  # full-run verdicts win (read last)
    for row in base:
        other = by_key.get((row.prompt, row.response))
        if other is not None:
            row.judge, row.judge_class = other.judge, other.judge_class
    return base, name


def _sample(rows: list[_Row], cap: int, seed: int) -> list[_Row]:
    if len(rows) <= cap:
        return rows
    seen: Counter = Counter()
    identities = []
    for r in rows:
        key = "\x00".join((r.prompt, r.response, r.category))
        identities.append(f"{key}\x00{seen[key]}")
        seen[key] += 1
    return [rows[i] for i in draw(identities, cap, seed).chosen]


def _example(model: str, dataset: str, row: _Row, verdict: str, scored_by: str,
             judge_name: str) -> Example:
    return Example(model=model, dataset=dataset, category=row.category, prompt=row.prompt,
                   response=row.response, verdict=verdict, scored_by=scored_by,
                   keyword=row.keyword, refusal_score=row.refusal_score, judge=row.judge,
                   judge_name=judge_name if row.judge else "", judge_class=row.judge_class, reasoning=row.reasoning)


def collect_examples(files: Sequence[ResultFile], selected: pd.DataFrame, cap: int = DEFAULT_CAP,
                     seed: int = DEFAULT_SEED, judge: str | None = None,
                     frames: Frames | None = None) -> Examples:
    """Both views for every (model, dataset) of report.selected; cap 0 gives none.
    ``frames``: the files as read_results already read them (else they are read here)."""
    out = Examples(cap=cap, seed=seed)
    if cap <= 0 or selected.empty:
        return out
    pairs = selected.groupby(["model", "dataset"], sort=False)["scored_by"].first()
    order = {m: i for i, m in enumerate(dict.fromkeys(selected["model"]))}
    keys = sorted(pairs.index, key=lambda k: (order[k[0]], DATASETS.index(k[1])))
    for model, dataset in keys:
        scored_by = str(pairs[(model, dataset)])
        mine = [f for f in files if f.model == model and f.dataset == dataset]
        if not mine:
            continue  # rows from an Inspect log: no prompts to show
        rows, name = _pair(model, dataset, mine, scored_by, judge, frames)
        use_judge = scored_by.startswith("judge:")
        wanted, kind = (ANSWERED, MISSES) if dataset == "toxic" else (REFUSED, OVER_REFUSALS)
        hits = [r for r in rows if (r.judge if use_judge else r.keyword) == wanted]
        out.examples.append(ExampleSet(kind, model, dataset, len(hits), [
            _example(model, dataset, r, wanted, scored_by, name) for r in _sample(hits, cap, seed)]))
        both = [r for r in rows if r.keyword in (REFUSED, ANSWERED) and r.judge in (REFUSED, ANSWERED)]
        if not both:
            continue
        out.compared.append((model, dataset))
        differ = [r for r in both if r.keyword != r.judge]
        out.disagreements.append(ExampleSet(DISAGREEMENTS, model, dataset, len(differ), [
            _example(model, dataset, r, r.judge if use_judge else r.keyword, scored_by, name)
            for r in _sample(differ, cap, seed)]))
    return out


def describe_scoring(scored_by: str) -> str:
    return "keyword rules" if scored_by == KEYWORD else f"judge {scored_by.split(':', 1)[1]}"
