"""Stage 5's judged sample: which rows, their inclusion probabilities, and judging in rounds.

    check_response.py --sample N [--design uniform|score] [--seed S]
    check_response.py --sample MAX --target_halfwidth H      # a pilot, then one extension

Each judged row's inclusion probability goes in the output column `inclusion_probability`
(and stage 4's `refusal_score` is carried beside it), and the design in `.run.json`
(`sample_design`), so the report weighs every row by its own recorded probability.

Rounds: the pilot (orbench.statistics.planning.pilot_size) is judged first; its own corrected rate
(orbench.statistics.estimate) gives its half-width and the judge calls the target needs; if it is
over the target, the sample grows once, with the same seed, to that size (a superset of the
pilot: nothing is judged twice) and at most MAX. The decision depends only on the pilot's
verdicts, so a run killed at any point and started again makes the same decision. Rows of
a larger sample that an earlier, killed run had already judged are kept while the pilot is
judged, and used if the extension needs them.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from orbench.protocol.constants import (
    COL_ANSWER_CATEGORY, COL_CATEGORY, COL_INCLUSION_PROBABILITY, COL_IS_REJECTED, COL_PROMPT, COL_REFUSAL_SCORE,
    COL_RESPONSE, DIRECT_ANSWER, REFUSAL_CLASSES,
)
from orbench.statistics.design import DEFAULT_FLOOR, SCORE, draw_design
from orbench.errors import UserError
from orbench.tables.resume import content_hash
from orbench.engine.jobs import Job
from orbench.tables.sampling import is_scored
from orbench.protocol.verdict import refused_in

if TYPE_CHECKING:
    from orbench.statistics.estimate import Estimate
# orbench.statistics.estimate and orbench.statistics.planning (numpy) are imported where a sample is sized or
# estimated: stage 5's --help imports this module and should not pay for numpy.

KEY_COLUMNS = (COL_PROMPT, COL_RESPONSE, COL_CATEGORY)  # stage 5's row identity (its KEY_COLUMNS)


def candidates(jobs: Sequence[Job], has_keyword: bool) -> list[Job]:
    """Rows a sample may hold: stage 4 gave them a verdict (or, without one, a response)."""
    return [j for j in jobs if is_scored(j.row, has_keyword)]


def score_of(row: dict[str, str]) -> float | None:
    try:
        value = float(str(row.get(COL_REFUSAL_SCORE, "")).strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def candidate_scores(cands: Sequence[Job]) -> list[float] | None:
    """Every candidate's refusal_score, or None when any is missing."""
    scores = [score_of(j.row) for j in cands]
    return None if not scores or any(s is None for s in scores) else scores  # type: ignore[return-value]


@dataclass(frozen=True)
class SamplePlan:
    jobs: list[Job]  # the judged rows, in input order
    pi: dict[str, float]  # job key -> inclusion probability
    info: dict  # what .run.json records


@dataclass
class Sampler:
    """The candidates and the design; plan(size) gives the sample of that size."""

    cands: list[Job]
    seed: int
    design: str
    floor: float = DEFAULT_FLOOR
    detector: str | None = None
    scores: list[float] | None = field(init=False)

    def __post_init__(self) -> None:
        self.scores = candidate_scores(self.cands)
        if self.design == SCORE and self.cands and self.scores is None:
            missing = sum(score_of(j.row) is None for j in self.cands)
            raise UserError(f"--design score needs stage 4's {COL_REFUSAL_SCORE!r} on every row it gave a "
                            f"verdict ({missing} of {len(self.cands)} have none); run stage 4 with --rules "
                            "scored, or use --design uniform")

    def plan(self, size: int) -> SamplePlan:
        drawn = draw_design([j.key for j in self.cands], self.scores, size, self.seed, self.design,
                            self.floor, self.detector)
        jobs = [self.cands[i] for i in drawn.chosen]
        info = {"sample_size": size, "sample_seed": self.seed, "population_rows": len(self.cands),
                "sampled_rows": len(jobs), "sample_design": drawn.design.as_info()}
        return SamplePlan(jobs, {j.key: p for j, p in zip(jobs, drawn.pi)}, info)

    def estimate(self, rows: Sequence[dict[str, str]], plan: SamplePlan, target_pts: float) -> Estimate:
        """The corrected rate from the output rows that belong to `plan` and have a verdict."""
        from orbench.statistics.estimate import estimate

        keyword = [bool(refused_in(j.row.get(COL_IS_REJECTED, ""))) for j in self.cands]
        judged = [r for r in members(rows, plan) if str(r.get(COL_ANSWER_CATEGORY, "")) in REFUSAL_CLASSES | {DIRECT_ANSWER}]
        pi = pi_by_content(plan)
        scores = None if self.scores is None else [score_of(r) for r in judged]
        return estimate(self.scores, keyword, scores, [bool(refused_in(r.get(COL_IS_REJECTED, ""))) for r in judged],
                        [r[COL_ANSWER_CATEGORY] in REFUSAL_CLASSES for r in judged],
                        [pi[row_hash(r)] for r in judged], self.design, self.floor, targets=(target_pts,))


def row_hash(row: dict[str, str]) -> str:
    """A row's content hash over stage 5's key columns (its job key without the occurrence)."""
    return content_hash([str(row.get(c, "")) for c in KEY_COLUMNS])


def pi_by_content(plan: SamplePlan) -> dict[str, float]:
    """Inclusion probability by content: rows with the same content have the same score."""
    return {row_hash(j.row): plan.pi[j.key] for j in plan.jobs}


def members(rows: Sequence[dict[str, str]], plan: SamplePlan) -> list[dict[str, str]]:
    """The rows that belong to the plan's sample (as many copies of a row as it holds)."""
    allowed = Counter(row_hash(j.row) for j in plan.jobs)
    kept = []
    for r in rows:
        h = row_hash(r)
        if allowed[h] > 0:
            allowed[h] -= 1
            kept.append(r)
    return kept


def with_probabilities(rows: list[dict[str, str]], plan: SamplePlan) -> list[dict[str, str]]:
    """Write each row's inclusion probability under `plan` (rows kept from an earlier run had
    the probability of the sample size they were judged under)."""
    pi = pi_by_content(plan)
    for r in rows:
        if row_hash(r) in pi:
            r[COL_INCLUSION_PROBABILITY] = pi_text(pi[row_hash(r)])
    return rows


def pi_text(p: float) -> str:
    return f"{p:.8g}"


RoundRunner = Callable[[SamplePlan, SamplePlan, bool], tuple[list[dict[str, str]], bool]]


def in_rounds(sampler: Sampler, maximum: int, target_pts: float,
              run_round: RoundRunner) -> tuple[SamplePlan, dict]:
    """Judge a pilot, then grow the sample once if the pilot misses the target.

    run_round(plan, keep, last) judges `plan`'s rows, keeps the rows of `keep` already in the
    output, and returns (the output's rows, whether every row was done). Returns the final
    plan and the `rounds` record for .run.json.
    """
    from orbench.statistics.planning import extension_size, pilot_size

    target = target_pts / 100.0
    first = sampler.plan(pilot_size(maximum))
    rows, done = run_round(first, sampler.plan(maximum), False)
    record = {"target_halfwidth_pts": target_pts, "max_sample": maximum, "rounds": []}
    if not done:  # failed rows: stop here; running the command again retries them
        record["stopped"] = "the pilot has failed rows; run the same command again"
        return first, record
    pilot = sampler.estimate(rows, first, target_pts)
    record["rounds"].append(_round_info(first, pilot, target_pts))
    size = first.info["sample_size"]
    if not pilot.halfwidth <= target:
        size = extension_size(pilot.calls[target_pts], size, maximum)
    final = sampler.plan(size) if size != first.info["sample_size"] else first
    rows, done = run_round(final, final, True)
    result = sampler.estimate(rows, final, target_pts)
    if final is not first:
        record["rounds"].append(_round_info(final, result, target_pts))
    if not done:
        record["stopped"] = "the extension has failed rows; run the same command again"
    elif result.halfwidth <= target:
        record["stopped"] = "target reached"
    elif size >= maximum:
        record["stopped"] = f"stopped at --sample {maximum} before the target"
    else:
        record["stopped"] = "target not reached after the one extension"
    record["halfwidth_pts"] = round(100 * result.halfwidth, 3)
    return final, record


def _round_info(plan: SamplePlan, est: Estimate, target_pts: float) -> dict:
    return {"sample_size": plan.info["sample_size"], "sampled_rows": plan.info["sampled_rows"],
            "corrected_pct": round(100 * est.rate, 3), "halfwidth_pts": round(100 * est.halfwidth, 3),
            "estimator": est.estimator,
            "calls_for_target": None if math.isnan(est.calls[target_pts]) else int(est.calls[target_pts])}


def rounds_text(record: dict) -> str:
    """What the rounds did, for the console."""
    lines = [f"judging in rounds toward ±{record['target_halfwidth_pts']:g} points (at most {record['max_sample']} rows):"]
    for i, r in enumerate(record["rounds"], start=1):
        need = "" if r["calls_for_target"] is None else f"; calls for the target: {r['calls_for_target']}"
        lines.append(f"  round {i}: {r['sampled_rows']} rows judged (asked {r['sample_size']}), corrected rate "
                     f"{r['corrected_pct']:.1f}% ±{r['halfwidth_pts']:.1f} ({r['estimator']} estimator){need}")
    lines.append(f"  {record['stopped']}")
    return "\n".join(lines)
