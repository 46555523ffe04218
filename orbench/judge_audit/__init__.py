"""Judging the judge: stage 5's judge scored against human labels before its verdicts count. May import run and everything below it.

- auditset: the shipped audit set (orbench/data/judge_audit.csv) and its fixed, balanced subsets;
- build: how that file is made from the labelled development data (rerunnable);
- intervals: continuity-corrected Wilson bounds, and Newcombe's bounds for a difference;
- scoring: agreement, kappa, precision, recall, the thresholds and the verdict;
- stage: the audit inside stage 5 (the --audit option, its jobs, the .run.json record).
"""

from orbench.judge_audit.scoring import (
    FAILED, INCOMPLETE, MIN_AGREEMENT_PCT, MIN_KAPPA, MIN_SCORED_SHARE, NOT_AUDITED, PASSED, STATUSES,
)

__all__ = ["FAILED", "INCOMPLETE", "MIN_AGREEMENT_PCT", "MIN_KAPPA", "MIN_SCORED_SHARE", "NOT_AUDITED", "PASSED",
           "STATUSES"]
