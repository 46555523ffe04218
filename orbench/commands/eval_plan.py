"""The plan of `orbench eval`: the requests stage 4 sends on each published set, those stage 5
sends (every row, or a judged sample), and the judge's audit, with the reply caps and the
token bounds of orbench.run.runplan. Computed from the bundled sets, before any call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..protocol.constants import COL_PROMPT
from ..run.runplan import MAX_BYTES_PER_TOKEN, PlanLine, endpoint_text, message_tokens, sent_text, text_tokens

PUBLISHED = ("or-bench-hard-1k", "or-bench-toxic")


@dataclass(frozen=True)
class EvalSettings:
    """What the plan depends on."""

    limit: int | None
    limit_seed: int
    max_tokens: int
    judge_max_tokens: int
    judge_sample: int  # 0: every row
    audit: int
    system_prompt: str | None
    reasoning_effort: str | None = None
    judge_reasoning_effort: str | None = None


def set_prompts(short: str, limit: int | None, seed: int) -> list[str]:
    """The prompts stage 4 will send from a published set (the same sample as --limit)."""
    from ..tables.inputs import load_rows

    return [r[COL_PROMPT] for r in load_rows(short, [COL_PROMPT], COL_PROMPT, limit, seed=seed).rows]


def eval_plan(target, judges: Sequence, s: EvalSettings, sets: Sequence[str] = PUBLISHED) -> list[PlanLine]:
    """Plan lines: stage 4 per set, then stage 5 per set and judge, then each judge's audit."""
    from ..protocol.prompts import judge_messages

    system = [{"role": "system", "content": s.system_prompt}] if s.system_prompt else []
    judge_template = message_tokens(judge_messages("", ""))
    reply_bound = s.max_tokens * MAX_BYTES_PER_TOKEN  # a reply not written yet, in judge tokens
    target_lines, judge_lines = [], []
    for short in sets:
        prompts = set_prompts(short, s.limit, s.limit_seed)
        tokens_in = sum(message_tokens(system) + text_tokens(p) for p in prompts)
        target_lines.append(PlanLine(f"stage 4 {short}", target.name, endpoint_text(target), len(prompts),
                                     s.max_tokens, tokens_in, "",
                                     *sent_text(target.params, 0.0, s.max_tokens, s.reasoning_effort)))
        judged = len(prompts) if s.judge_sample == 0 else min(s.judge_sample, len(prompts))
        # the sample is drawn among scored rows, so its prompts are not known yet: bound each by the longest
        longest = max((text_tokens(p) for p in prompts), default=0)
        per_row = judge_template + reply_bound
        bound = (tokens_in - len(prompts) * message_tokens(system) if judged == len(prompts) else judged * longest)
        for j in judges:
            judge_lines.append(PlanLine(f"stage 5 {short}", j.name, endpoint_text(j), judged, s.judge_max_tokens,
                                        bound + judged * per_row,
                                        "every row" if judged == len(prompts) else "a judged sample",
                                        *sent_text(j.params, 0.0, s.judge_max_tokens, s.judge_reasoning_effort)))
    audit_lines = []
    if s.audit:
        from ..judge_audit import auditset

        audit_in = sum(message_tokens(judge_messages(i.prompt, i.response)) for i in auditset.subset(s.audit))
        audit_lines = [PlanLine("stage 5 audit", j.name, endpoint_text(j), s.audit, s.judge_max_tokens, audit_in,
                                "paid once, then cached",
                                *sent_text(j.params, 0.0, s.judge_max_tokens, s.judge_reasoning_effort))
                       for j in judges]
    return target_lines + judge_lines + audit_lines
