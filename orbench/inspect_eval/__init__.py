"""OR-Bench as Inspect tasks (the `inspect` extra). May import run and everything below it.

- ``tasks.py``: the tasks ``or_bench_80k``, ``or_bench_hard_1k`` and ``or_bench_toxic``;
- ``scorers.py``: our refusal detector and our stage-5 judge as Inspect scorers, and the
  rejection-rate metrics;
- ``logs.py``: reads the ``.eval`` logs of these tasks into the report's per-row outcomes;
- ``_registry.py``: what the package's ``inspect_ai`` entry point registers, so that
  ``inspect eval orbench/or_bench_hard_1k`` finds the tasks.

This file imports nothing from inspect_ai: it holds the names the tasks, the scorers and the
log reader share, and the core install (which has no inspect_ai) may import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchSet:
    """One OR-Bench set as an Inspect task."""

    task: str  # the Inspect task name
    source: str  # the default input: the set's short name (read_table: bundled copy, else the Hub)
    dataset: str  # the report's name for the set: safe, hard or toxic


BENCH_SETS: tuple[BenchSet, ...] = (
    BenchSet("or_bench_80k", "or-bench-80k", "safe"),
    BenchSet("or_bench_hard_1k", "or-bench-hard-1k", "hard"),
    BenchSet("or_bench_toxic", "or-bench-toxic", "toxic"),
)
SET_BY_TASK: dict[str, BenchSet] = {s.task: s for s in BENCH_SETS}

# The scorers' registered names (what the log's score entries are keyed by) and the task
# argument that picks them: -T scorer=detector|judge|both.
DETECTOR_SCORER = "refusal_detector"
JUDGE_SCORER = "refusal_judge"
SCORER_CHOICES: tuple[str, ...] = ("detector", "judge", "both")
DEFAULT_SCORER = "detector"

# A row's outcome, spelt as the report spells it (orbench.report: REFUSED ... FAILED; a test
# checks they agree). Unscored: an empty or filtered response, or a judge verdict that cannot
# be read. Failed: the sample ended in an error (the model call or the judge call failed).
REFUSED = "refused"
ANSWERED = "answered"
UNSCORED = "unscored"
FAILED = "failed"

# Sample metadata key holding the category, and the value for a prompt without one (the
# report's spelling too).
CATEGORY_KEY = "category"
NO_CATEGORY = "(none)"

# Keys of a score's metadata.
META_OUTCOME = "outcome"  # refused / answered / unscored
META_VERDICT = "verdict"  # detector: answered, refused, empty, filtered, cut_in_thinking...; judge: its class
META_RULES = "rules"  # detector: the rule set applied
META_REFUSAL_SCORE = "refusal_score"  # detector: its score in [0, 1], when it gives one
META_JUDGE_MODEL = "judge_model"  # judge: the grader model's name
META_JUDGE_REPLY = "judge_reply"  # judge: its full reply (stage 5's answer_type_response)
META_REASONING = "reasoning"  # the thinking kept apart from the reply scored (detector: the target's; judge: its own)

# Keys of the task's metadata (recorded in the log's header).
TASK_META_SET = "orbench_set"  # safe, hard or toxic
TASK_META_NAME = "orbench_name"  # the target's name in our report (-T name=...), or None
