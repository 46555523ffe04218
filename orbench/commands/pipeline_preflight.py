"""run_pipeline.sh's checks and plan, before its first model call.

    python -m orbench.commands.pipeline_preflight --generator_model G ... (run_pipeline.sh passes its settings)

Settings that cannot finish stop here with one line and exit code 2: HARD_K above the number
of targets (the hard set needs that many refusals of one prompt), a model that does not
resolve or whose key is missing, an endpoint that does not answer (orbench.engine.preflight).
Then the plan: per step and model, the requests at most, max_tokens, and token bounds
(orbench.run.runplan). Rows not known yet (the sets are built from the replies) are bounded from
the settings: every seed found, every rewrite kept, every prompt in every set.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Sequence

from ..run.cli import Parser, env_limit, non_negative_int, positive_int, run_cli
from ..errors import UserError
from ..run.runplan import MAX_BYTES_PER_TOKEN, MESSAGE_MARGIN, PlanLine, endpoint_text, message_tokens

TARGETS = 2  # the model, and the model with the safety system prompt
PUBLISHED_SETS = 2  # OR-Bench-Hard-1K and -Toxic, REAL_SAMPLE prompts of each


def build_parser() -> Parser:
    p = Parser(prog="run_pipeline.sh (checks)", description=__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    for role in ("generator_model", "rewriter_model", "moderator_models", "target_model", "judge_model"):
        p.add_argument(f"--{role}", required=True)
    p.add_argument("--categories", type=positive_int, required=True, help="how many categories")
    for name in ("seeds_per_category", "hard_k"):
        p.add_argument(f"--{name}", type=positive_int, required=True)
    for name in ("prompts_per_set", "judge_sample", "audit", "real_sample"):
        p.add_argument(f"--{name}", type=non_negative_int, required=True)
    for name in ("max_tokens", "seed_max_tokens", "rewrite_max_tokens", "moderation_max_tokens", "judge_max_tokens"):
        p.add_argument(f"--{name}", type=positive_int, required=True)
    p.add_argument("--num_rewrites", type=positive_int, default=5)
    p.add_argument("--parse_attempts", type=positive_int, default=3)
    return p


def capped(n: int, limit: int | None) -> int:
    return min(n, limit) if limit else n


def plan(a: argparse.Namespace, ep: dict[str, list], limit: int | None) -> list[PlanLine]:
    """Upper bounds per step, from the settings (ORBENCH_LIMIT caps each stage's input rows)."""
    from ..protocol.prompts import BATCH_SIZE, generator_messages, judge_messages, moderator_messages, rewriter_messages

    seeds = capped(a.seeds_per_category, limit)  # per category (stage 1 stops at --limit prompts)
    seed_text = a.seed_max_tokens * MAX_BYTES_PER_TOKEN  # a seed is part of a reply of at most that many tokens
    rewrite_text = a.rewrite_max_tokens * MAX_BYTES_PER_TOKEN
    reply_text = a.max_tokens * MAX_BYTES_PER_TOKEN
    rewrites = capped(seeds, limit) * a.num_rewrites  # per category
    moderated = a.categories * (capped(rewrites, limit) + capped(seeds, limit))
    per_set = capped(a.categories * rewrites, a.prompts_per_set or limit)
    toxic = capped(a.categories * seeds, a.prompts_per_set or limit)
    stage4 = TARGETS * (2 * per_set + toxic + PUBLISHED_SETS * a.real_sample)
    files = [per_set, per_set, toxic] + [a.real_sample] * PUBLISHED_SETS
    judged_rows = TARGETS * (sum(min(a.judge_sample, n) for n in files) if a.judge_sample else sum(files[1:]))
    calls = a.categories * math.ceil(seeds / BATCH_SIZE)
    gen_in = a.categories * message_tokens(generator_messages("self-harm", BATCH_SIZE)) * math.ceil(seeds / BATCH_SIZE)
    lines = [
        _line("stage 1 (first round)", ep["generator"], calls, a.seed_max_tokens, gen_in,
              "later rounds ask only for the seeds still missing"),
        _line("stage 2", ep["rewriter"], a.categories * seeds * a.parse_attempts, a.rewrite_max_tokens,
              a.categories * seeds * a.parse_attempts * (message_tokens(rewriter_messages("", a.num_rewrites))
                                                         + seed_text), f"up to {a.parse_attempts} asks per seed"),
    ]
    lines += [_line("stage 3", [m], moderated, a.moderation_max_tokens,
                    moderated * (message_tokens(moderator_messages("")) + rewrite_text)) for m in ep["moderator"]]
    lines += [_line("stage 4", ep["target"], stage4, a.max_tokens, stage4 * (rewrite_text + MESSAGE_MARGIN),
                    f"{TARGETS} targets: the model, and with the safety prompt")]
    judge_in = message_tokens(judge_messages("", "")) + rewrite_text + reply_text
    lines += [_line("stage 5", [j], judged_rows, a.judge_max_tokens, judged_rows * judge_in) for j in ep["judge"]]
    if a.audit:
        lines += [_line("stage 5 audit", [j], a.audit, a.judge_max_tokens, a.audit * judge_in, "paid once, then cached")
                  for j in ep["judge"]]
    return lines


def _line(step: str, endpoints: list, requests: int, max_tokens: int, tokens_in: int, note: str = "") -> PlanLine:
    e = endpoints[0]
    return PlanLine(step, e.name, endpoint_text(e), requests, max_tokens, tokens_in, note)


def _run(a: argparse.Namespace) -> int:
    from ..engine import preflight
    from ..run.runplan import format_plan

    if a.hard_k > TARGETS:
        raise UserError(f"HARD_K={a.hard_k} cannot finish: the hard set needs {a.hard_k} refusals of a prompt and the "
                        f"pipeline has {TARGETS} targets (the model, and the model with the safety prompt); "
                        f"set HARD_K to 1 or {TARGETS}")
    roles = [preflight.Role("generator", a.generator_model), preflight.Role("rewriter", a.rewriter_model),
             preflight.Role("moderator", a.moderator_models), preflight.Role("target", a.target_model),
             preflight.Role("judge", a.judge_model)]
    endpoints = preflight.check(roles)
    ep: dict[str, list] = {}
    for role, e in endpoints:
        ep.setdefault(role, []).append(e)
    print(format_plan(plan(a, ep, env_limit()), "run_pipeline.sh plan"), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(lambda args: _run(build_parser().parse_args(args)), argv)


if __name__ == "__main__":
    sys.exit(main())
