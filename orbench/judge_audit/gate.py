"""What the audit decides for stage 5's rows: whether they are sent to the judge at all.

Stage 5 runs the audit first. Its rows (a judged sample, or every row) are sent only when the
judge, or an ensemble's vote, passes; a judge that fails is not paid for them. The verdict
that counts is the one the audit's failed calls can no longer change (`scoring.settled`):

- passed: the rows are judged, as they always were;
- failed: the rows are not sent. One line says so, with the audit's figures and the way on
  (--judge_failed_audit); the run record says why under ``judge_skipped``; exit code 0: the
  stage did what it was asked, and a script goes on to the report, which shows why;
- incomplete (some audit calls failed and the rest cannot tell yet): the rows wait. Exit 3,
  as for any failed request: the same command retries the failed audit calls (the others are
  cached) and then decides.

``--judge_failed_audit`` judges the rows whatever the audit finds; ``--audit 0`` has no audit
and gates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orbench.judge_audit.scoring import FAILED, INCOMPLETE, MIN_AGREEMENT_PCT, MIN_KAPPA

OVERRIDE = "--judge_failed_audit"


def add_gate_option(parser) -> None:
    parser.add_argument(
        OVERRIDE, action="store_true",
        help="send the rows to the judge even when it fails its audit (by default a judge that fails is not paid for "
             "them: the stage says so, records why in .run.json under judge_skipped, and exits 0); with this "
             "option the audit runs after the rows, and in batch mode joins their batch")


@dataclass(frozen=True)
class Skip:
    """The rows were not sent: why, for the run record and the one line printed."""

    status: str  # FAILED or INCOMPLETE (the audit's settled verdict)
    rows: int  # the rows that were not sent
    record: dict[str, Any]  # the run record's judge_skipped

    @property
    def final(self) -> bool:
        """A failed judge's skip is final (the same command skips again); an undecided one is not."""
        return self.status == FAILED


def _cell(d: dict | None, unit: str = "%", digits: int = 1) -> str:
    if not d or d.get("value") is None:
        return "n/a"
    return f"{d['value']:.{digits}f}{unit} [{d['low']:.{digits}f}, {d['high']:.{digits}f}]"


def decide(audit: dict[str, Any] | None, rows: int, override: bool) -> Skip | None:
    """None: send the rows. A Skip: the audit's settled verdict holds them back."""
    if audit is None or override:
        return None
    status = audit.get("settled") or audit.get("verdict")
    if status not in (FAILED, INCOMPLETE):
        return None
    deciding = audit.get("vote") or audit["judges"][0]
    figures = (f"agreement {_cell(deciding.get('agreement_pct'))}, kappa {_cell(deciding.get('kappa'), '', 2)} "
               f"on {audit['size']} human-labelled responses")
    if status == FAILED:
        why = (f"judge {deciding['judge']} failed its audit ({figures}; a judge passes with kappa >= {MIN_KAPPA:g} "
               f"and agreement >= {MIN_AGREEMENT_PCT:g}%)")
        way_on = f"to judge them anyway, run the same command with {OVERRIDE}"
    else:
        why = (f"judge {deciding['judge']}'s audit is incomplete ({deciding['failed']} of {deciding['rows']} calls "
               f"failed, and the others cannot tell yet whether it passes)")
        way_on = f"run the same command again to retry those calls, or add {OVERRIDE} to judge the rows now"
    record = {"reason": status, "why": why, "rows_not_sent": rows, "judge": deciding["judge"],
              "agreement_pct": deciding.get("agreement_pct"), "kappa": deciding.get("kappa"),
              "audit_size": audit["size"], "how_to_judge_anyway": way_on}
    return Skip(status=status, rows=rows, record=record)


def skip_line(skip: Skip, where: str) -> str:
    """The one line that says the rows were not sent, and the way on."""
    return (f"stage 5: {skip.record['why']}, so the {skip.rows} row(s) to judge were not sent (recorded in {where} "
            f"under judge_skipped); {skip.record['how_to_judge_anyway']}.")
