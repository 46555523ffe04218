"""The judges behind the stage-5 files, and what their audits found (orbench.judge_audit).

A stage-5 file's .run.json holds its judge's audit under "audit" (since stage 5 audits by
default). One judge (its `check_model`, e.g. `gpt4` or an ensemble `a,b,c`) may have many
files; their audits are of the same rows through the same cache, and the most complete one
is taken (fewest failed calls, then most rows scored). A judge none of whose files holds an
audit (files written before the audit existed, or `--audit 0`) is "not audited". A file whose
record says `judge_skipped` holds no verdicts: its judge failed the audit and stage 5 did not
send it the rows (orbench.judge_audit.gate); the judge's tables say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from orbench.judge_audit.scoring import (
    FAILED, INCOMPLETE, MIN_AGREEMENT_PCT, MIN_KAPPA, MIN_SCORED_SHARE, NOT_AUDITED, PASSED,
)
from orbench.report.common import ResultFile

AUDIT_RULE = (
    f"Before its verdicts count, stage 5 has each judge label human-labelled responses shipped "
    f"with orbench (half refusals, half answers; --audit N, default 100). A judge passes with "
    f"kappa of at least {MIN_KAPPA:g} and at least {MIN_AGREEMENT_PCT:g}% agreement with the human "
    f"labels, and a readable verdict on at least {100 * MIN_SCORED_SHARE:g}% of them; on this "
    f"balanced set kappa = recall + specificity - 1. 95% intervals: Wilson with continuity "
    f"correction; kappa: Newcombe's. Stage 5 audits first and does not send a judge that fails "
    f"the rows to judge (unless --judge_failed_audit); where a failed judge's verdicts exist, they are "
    f"shown but not used: its rates and corrected rates stay out of the figure, the scores and the "
    f"ranking, which use the keyword rates instead."
)


@dataclass(frozen=True)
class JudgeAudit:
    judge: str  # as the files name it (check_model)
    status: str  # passed, failed, incomplete, not audited
    records: list[dict[str, Any]] = field(default_factory=list)  # each judge, then the vote
    size: int = 0
    reasons: list[str] = field(default_factory=list)  # of the record that decides
    skipped: int = 0  # its stage-5 files whose rows were not sent (the audit said no)
    judged: int = 0  # its stage-5 files that hold verdicts

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    @property
    def nothing_judged(self) -> bool:
        """Stage 5 sent this judge no row (it failed its audit): no rate of it exists."""
        return self.skipped > 0 and self.judged == 0


def _quality(audit: dict[str, Any]) -> tuple[int, int]:
    deciding = audit.get("vote") or (audit.get("judges") or [{}])[0]
    return (-int(deciding.get("failed") or 0), int(deciding.get("scored") or 0))


def collect_audits(files: Sequence[ResultFile]) -> dict[str, JudgeAudit]:
    """judge name -> its audit, for every judge of a stage-5 file among the inputs."""
    found: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, list[bool]] = {}
    for f in files:
        if f.stage != 5:
            continue
        audit = f.record.audit if f.record is not None and f.kind != "failed" else None
        found.setdefault(f.judge, [])
        if f.kind != "failed":
            skipped.setdefault(f.judge, []).append(f.record is not None and f.record.judge_skipped is not None)
        if isinstance(audit, dict) and audit.get("judges"):
            found[f.judge].append(audit)
    out = {}
    for judge, audits in found.items():
        marks = skipped.get(judge, [])
        if not audits:
            out[judge] = JudgeAudit(judge=judge, status=NOT_AUDITED)
            continue
        out[judge] = _judge_audit(judge, max(audits, key=_quality), marks)
    return out


def _judge_audit(judge: str, best: dict[str, Any], marks: list[bool]) -> JudgeAudit:
    records = list(best["judges"]) + ([best["vote"]] if best.get("vote") else [])
    deciding = best.get("vote") or best["judges"][0]
    status = str(best.get("verdict") or deciding.get("verdict"))
    reasons = list(deciding.get("reasons") or [])
    settled = best.get("settled")
    if status == INCOMPLETE and settled in (PASSED, FAILED):  # its failed calls can no longer change it
        reasons = [f"it {'passes' if settled == PASSED else 'fails'} whatever its {deciding.get('failed')} failed "
                   f"audit call(s) would say"] + reasons
        status = settled
    return JudgeAudit(judge=judge, status=status if status in (PASSED, FAILED, INCOMPLETE) else NOT_AUDITED,
                      records=records, size=int(best.get("size") or 0), reasons=reasons, skipped=sum(marks),
                      judged=len(marks) - sum(marks))


FULL_AUDIT = 100  # stage 5's --audit default


def audit_rule(audits: dict[str, JudgeAudit]) -> str:
    """AUDIT_RULE, and what a small audit is worth when one of the judges had one."""
    small = sorted({a.size for a in audits.values() if 0 < a.size < FULL_AUDIT})
    if not small:
        return AUDIT_RULE
    sizes = " and ".join(str(n) for n in small)
    return (AUDIT_RULE + f" An audit of {sizes} rows (fewer than stage 5's default {FULL_AUDIT}) has wide "
            f"intervals (at 20 rows, about ±0.35 on kappa): enough to show a judge that fails by far, whose "
            f"kappa interval ends below {MIN_KAPPA:g}, but a judge that passes on so few rows is not shown to be good.")


def _interval(d: dict | None, digits: int = 1) -> str:
    if not d or d.get("value") is None or (isinstance(d["value"], float) and math.isnan(d["value"])):
        return "–"
    return f"{d['value']:.{digits}f} [{d['low']:.{digits}f}, {d['high']:.{digits}f}]"


VERDICT_WORDS = {
    PASSED: "passed: its verdicts are used",
    FAILED: "FAILED: shown, not used",
    INCOMPLETE: "audit incomplete: used as before; re-run stage 5 to finish it",
    NOT_AUDITED: "not audited: used as before, unchecked",
}

JUDGES_HEAD = ["judge", "audited rows", "scored / unscored / failed", "agreement % [95% CI]", "kappa [95% CI]",
               "precision % [95% CI]", "recall % [95% CI]", "verdict"]


def _skipped_words(a: JudgeAudit) -> str:
    """The verdict cell of a judge that stage 5 did not send (some of) the rows to."""
    files = f"{a.skipped} of its {a.skipped + a.judged} stage-5 file(s)"
    if a.status == FAILED:
        return "FAILED: not sent the rows, nothing judged" if a.nothing_judged else f"FAILED: not sent the rows of {files}"
    return f"audit incomplete: the rows of {files} wait for it; re-run stage 5 to finish it"


def judge_rows(audits: dict[str, JudgeAudit]) -> list[dict[str, str]]:
    """The Judges table as text cells, one dict per judge (and per member of an ensemble),
    for the page and summary.md. `_status` says how to mark the row."""
    rows = []
    for name, a in audits.items():
        if not a.records:
            rows.append({"judge": name, "audited rows": "0", "scored / unscored / failed": "–",
                         "agreement % [95% CI]": "–", "kappa [95% CI]": "–", "precision % [95% CI]": "–",
                         "recall % [95% CI]": "–", "verdict": VERDICT_WORDS[a.status], "_status": a.status})
            continue
        deciding = a.records[-1]
        for rec in a.records:
            words = VERDICT_WORDS[a.status] if rec is deciding else f"{rec['verdict']} (a member of {name})"
            if rec is deciding and a.skipped:
                words = _skipped_words(a)
            if rec is deciding and rec.get("reasons"):
                words += f" ({'; '.join(rec['reasons'])})"
            rows.append({
                "judge": str(rec["judge"]), "audited rows": str(rec["rows"]),
                "scored / unscored / failed": f"{rec['scored']} / {rec['unscored']} / {rec['failed']}",
                "agreement % [95% CI]": _interval(rec.get("agreement_pct")),
                "kappa [95% CI]": _interval(rec.get("kappa"), 2),
                "precision % [95% CI]": _interval(rec.get("precision_pct")),
                "recall % [95% CI]": _interval(rec.get("recall_pct")),
                "verdict": words, "_status": a.status if rec is deciding else "",
            })
    return rows
