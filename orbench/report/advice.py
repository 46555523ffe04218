"""The report's warnings: one line per cause, naming the models it touches, worded as what to
do. They go to summary.md, the page (right after the summary) and the console.

Causes: a judge that failed its audit (the judge is the unreliable part), keyword rules that
a trusted judge's sample shows to be off (report the corrected rate), a judge never audited
or whose audit is unfinished, and a hard set built from the models tested on it; and
(report/thinking.py) replies cut inside their thinking, and models sent other parameters than
the protocol's; (report/languages.py) replies in other languages than English, per language.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import pandas as pd

from orbench.judge_audit.scoring import FAILED, INCOMPLETE, NOT_AUDITED
from orbench.report.choice import VerdictChoice
from orbench.report.common import ResultFile
from orbench.report.correction import UNRELIABLE, is_unreliable
from orbench.report.judges import JudgeAudit
from orbench.report.provenance import SelfBuilt

SHORT = {"safe": "80K", "hard": "Hard-1K", "toxic": "Toxic"}


@dataclass(frozen=True)
class Advice:
    cause: str  # judge_failed, keyword_unreliable, not_audited, audit_incomplete, self_built_hard;
    # report/thinking.py: cut_in_thinking, not_protocol_settings; report/languages.py: languages
    text: str


def _models_and_sets(pairs: Iterable[tuple[str, str]]) -> str:
    by_model: dict[str, list[str]] = {}
    for model, ds in pairs:
        sets = by_model.setdefault(model, [])
        if SHORT.get(ds, ds) not in sets:
            sets.append(SHORT.get(ds, ds))
    order = {v: i for i, v in enumerate(SHORT.values())}
    return "; ".join(f"{m} ({', '.join(sorted(s, key=lambda x: order.get(x, 9)))})" for m, s in by_model.items())


def _judged(files: Sequence[ResultFile], judge: str) -> list[tuple[str, str]]:
    return [(f.model, f.dataset) for f in files if f.stage == 5 and f.judge == judge]


def _judge_advice(audit: JudgeAudit, choice: VerdictChoice, files: Sequence[ResultFile]) -> Advice | None:
    touched = _models_and_sets(_judged(files, audit.judge))
    why = "; ".join(audit.reasons)
    if audit.status == FAILED and audit.nothing_judged:
        return Advice("judge_failed", f"Judge {audit.judge} failed its audit ({why}, on {audit.size} human-labelled "
                                      f"responses), so stage 5 did not send it the rows: nothing was judged, and "
                                      f"every rate here is a keyword rate. To check the keyword rules, run stage 5 "
                                      f"again with a judge that passes (--check_model); --judge_failed_audit "
                                      f"judges the rows with this one anyway. For: {touched}.")
    if audit.status == FAILED:
        if choice.prefer == "judge":
            return Advice("judge_failed", f"Judge {audit.judge} failed its audit ({why}), yet --prefer judge uses "
                                          f"its verdicts: the figure and scores rest on a judge that disagrees with "
                                          f"human labels. Drop --prefer judge, or judge again with a judge that "
                                          f"passes. For: {touched}.")
        return Advice("judge_failed", f"Judge {audit.judge} failed its audit ({why}, on {audit.size} human-labelled "
                                      f"responses): do not report its rates or corrected rates. They are shown, "
                                      f"marked, but the figure, the scores and the ranking use the keyword rates. "
                                      f"To check the keyword rules, run stage 5 again with a judge that passes "
                                      f"(--check_model). For: {touched}.")
    if audit.status == INCOMPLETE:
        return Advice("audit_incomplete", f"Judge {audit.judge}'s audit is incomplete ({why}): run the same stage-5 "
                                          f"command again to finish it; until then its verdicts are used unchecked. "
                                          f"For: {touched}.")
    if audit.status == NOT_AUDITED:
        return Advice("not_audited", f"Judge {audit.judge} was not audited against human labels (its stage-5 "
                                     f"files predate the audit, or ran with --audit 0): its verdicts are used "
                                     f"unchecked. Run stage 5 again (--audit 100, the default; cached rows cost "
                                     f"nothing) to check it. For: {touched}.")
    return None


def _keyword_advice(corrections: pd.DataFrame, choice: VerdictChoice) -> Advice | None:
    parts = []
    for _, r in corrections.iterrows():
        if not choice.uses_correction(str(r["judge"])) and choice.prefer is None:
            continue  # the judge failed its audit: its disagreement says nothing about the rules
        if not is_unreliable(r["keyword_pct"], r["corrected_pct"], r["kappa"]):
            continue
        kappa = "n/a" if math.isnan(r["kappa"]) else f"{r['kappa']:.2f}"
        parts.append(f"{r['model']} on {SHORT.get(r['dataset'], r['dataset'])} (keyword {r['keyword_pct']:.1f}%, "
                     f"corrected {r['corrected_pct']:.1f}% [{r['corrected_ci_low_pct']:.1f}, "
                     f"{r['corrected_ci_high_pct']:.1f}], kappa {kappa}, judge {r['judge']})")
    if not parts:
        return None
    uses = ("the figure and scores use it" if choice.prefer is None or choice.prefer == "judge"
            else "--prefer keyword keeps the figure on the keyword rates")
    return Advice("keyword_unreliable", f"{UNRELIABLE.replace('this model', 'these models')} ({uses}): "
                                        + "; ".join(parts) + ".")


def _hard_advice(built: SelfBuilt) -> Advice:
    return Advice("self_built_hard", f"The hard set {built.hard_set.name} was built from the refusals of "
                                     f"{', '.join(built.builders)} (a prompt is in it when at least {built.k} of them "
                                     f"refused it), and {', '.join(built.tested)} are tested on it here: their "
                                     f"Hard-1K rates are high by construction. Compare models on the published "
                                     f"OR-Bench-Hard-1K (--input_file or-bench-hard-1k), or on a hard set built "
                                     f"from other models.")


def advice(files: Sequence[ResultFile], audits: dict[str, JudgeAudit], choice: VerdictChoice,
           corrections: pd.DataFrame, self_built: Sequence[SelfBuilt]) -> list[Advice]:
    out = [a for a in (_judge_advice(audits[j], choice, files) for j in audits) if a is not None]
    out.sort(key=lambda a: ("judge_failed", "audit_incomplete", "not_audited").index(a.cause))
    keyword = _keyword_advice(corrections, choice)
    if keyword is not None:
        out.insert(sum(a.cause == "judge_failed" for a in out), keyword)
    out += [_hard_advice(b) for b in self_built]
    return out
