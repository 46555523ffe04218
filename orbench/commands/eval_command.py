"""orbench eval: measure one model on OR-Bench as the paper did, in one command.

  orbench eval --model vllm/meta-llama/Llama-3.1-8B-Instruct --judge openai/gpt-4-turbo-2024-04-09

What it does, in order (each step resumes: a re-run does only what is missing, and a reply
already paid for is read from the response cache):
  0. checks: every model resolves (a registry name, PROVIDER/MODEL or a model id, its key
     set) and its endpoint answers (GET /models, $ORBENCH_PREFLIGHT_TIMEOUT s, default 5);
     then prints the plan: requests per step and model, max_tokens, token bounds.
  1. stage 4: the target on OR-Bench-Hard-1K (1,319 prompts) and OR-Bench-Toxic (655),
     the copies bundled with orbench: one user message, temperature 0, max_tokens 1000
     (OpenAI's reasoning models: max_completion_tokens and no temperature, as they take
     them; a model that thinks needs a larger --max_tokens: docs/models_that_think.md).
  2. stage 5: the judge on every response (the paper's way; --judge_sample 0, the default),
     or on a random sample of N scored rows per set (--judge_sample N), from which the
     report corrects the detector's rate. The judge is audited on --audit human-labelled
     responses (default 100) and the report sets aside a judge that fails its audit.
     --judge none skips the judge (the detector's verdicts only).
  3. the report, the model beside the paper's 32 (--compare_paper).

Out, in --output_dir (default runs/eval/NAME): results/ (stage 4), judged/ (stage 5),
report/ (report.html, summary.md, summary.csv, tradeoff.png) and eval.run.json (each
role's model, provider and base URL; never a key). Every CSV has its .run.json beside it.

Endpoints per role: --base_url/--api_key_env move the target, --judge_base_url and
--judge_api_key_env the judge; a provider's key goes only to that provider's URL.

Exit codes: 0 done; 3 some rows failed, or a step yielded nothing usable (one line names the
step, the model and why; the same command retries); 2 a setting that cannot finish (an
unknown model, a missing key, an endpoint that does not answer), before anything is sent,
or a fatal endpoint error; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Sequence

from ..run.cli import Parser, add_endpoint_options, env_limit, non_negative_int, positive_int, run_cli
from ..tables.naming import safe_name

SETS = ("or-bench-hard-1k", "or-bench-toxic")
NO_JUDGE = "none"
PAPER_JUDGE = "gpt4"  # the registry's gpt-4-turbo-2024-04-09


def build_parser(prog: str = "orbench eval") -> Parser:
    p = Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="the target: a registry name, PROVIDER/MODEL or a model id")
    p.add_argument("--judge", default=PAPER_JUDGE,
                   help=f"the judge (a comma-separated list: an ensemble, majority vote), or '{NO_JUDGE}' "
                        f"(default {PAPER_JUDGE}: gpt-4-turbo-2024-04-09 on OpenAI, the paper's judge)")
    p.add_argument("--name", default=None, help="the target's name in files and the report (default: --model)")
    p.add_argument("--output_dir", default=None, help="the run folder (default: runs/eval/NAME)")
    p.add_argument("--judge_sample", type=non_negative_int, default=0, metavar="N",
                   help="0: judge every row, as the paper (default); N: a random sample of N scored rows per "
                        "set, and corrected rates in the report")
    p.add_argument("--judge_seed", type=int, default=0, help="the judged sample's seed (default 0)")
    p.add_argument("--audit", type=non_negative_int, default=100, metavar="N",
                   help="human-labelled responses the judge is audited on (default 100; 0: none)")
    p.add_argument("--limit", type=positive_int, default=env_limit(), metavar="N",
                   help="N prompts of each set: a seeded sample over the categories (default: $ORBENCH_LIMIT if "
                        "set, else every prompt)")
    p.add_argument("--limit_seed", type=int, default=0, help="the seed of --limit's sample (default 0)")
    p.add_argument("--max_tokens", type=positive_int, default=1000, help="the target's reply cap (default 1000)")
    p.add_argument("--judge_max_tokens", type=positive_int, default=1000, help="the judge's reply cap (default 1000)")
    p.add_argument("--reasoning_effort", default=None, metavar="EFFORT",
                   help="the target's reasoning_effort (e.g. low, medium, high), for a model that takes one "
                        "(default: not sent)")
    p.add_argument("--judge_reasoning_effort", default=None, metavar="EFFORT",
                   help="the judge's reasoning_effort, for a judge that takes one (default: not sent)")
    p.add_argument("--system_prompt", default=None, help="a system message before each prompt (default: none)")
    p.add_argument("--rules", default=None, help="stage 4's refusal detection (default: stage 4's, scored)")
    p.add_argument("--concurrency", type=positive_int, default=None, help="target requests in flight")
    p.add_argument("--judge_concurrency", type=positive_int, default=None, help="judge requests in flight")
    p.add_argument("--timeout", type=float, default=None, help="seconds per request (default: the registry's, else 120)")
    add_endpoint_options(p, role="the target")
    add_endpoint_options(p, "judge_", role="the judge")
    p.add_argument("--models_file", default=None, help="extra model registry (TOML); also $ORBENCH_MODELS_FILE")
    p.add_argument("--cache_path", default=None, help="response cache file (default: the stages')")
    p.add_argument("--no_cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument("--plan_only", action="store_true", help="check the settings, print the plan, send nothing")
    return p


def main(argv: Sequence[str] | None = None, prog: str = "orbench eval") -> int:
    return run_cli(lambda a: _run(build_parser(prog).parse_args(a)), argv)


def _run(args: argparse.Namespace) -> int:
    from ..engine import preflight
    from .eval_plan import EvalSettings, eval_plan
    from ..run.runplan import format_plan

    judged = args.judge.strip().lower() != NO_JUDGE
    roles = [preflight.Role("target", args.model, args.base_url, args.api_key_env)]
    if judged:
        roles.append(preflight.Role("judge", args.judge, args.judge_base_url, args.judge_api_key_env))
    endpoints = preflight.check(roles, args.models_file)
    target = endpoints[0][1]
    judges = [ep for role, ep in endpoints if role == "judge"]
    settings = EvalSettings(args.limit, args.limit_seed, args.max_tokens, args.judge_max_tokens,
                            args.judge_sample, args.audit if judged else 0, args.system_prompt,
                            args.reasoning_effort, args.judge_reasoning_effort)
    print(format_plan(eval_plan(target, judges, settings, SETS), f"orbench eval plan for {target.name}"), flush=True)
    if args.plan_only:
        return 0
    run = Run(args, judged)
    run.record(endpoints)
    return run.stage4() or (run.stage5() if judged else 0) or run.report()


class Run:
    """The run folder and the steps, each a stage's own main on the files of the step before."""

    def __init__(self, args: argparse.Namespace, judged: bool) -> None:
        self.args, self.judged = args, judged
        self.name = args.name or args.model
        self.dir = Path(args.output_dir or Path("runs") / "eval" / safe_name(self.name))
        self.results, self.judged_dir, self.report_dir = self.dir / "results", self.dir / "judged", self.dir / "report"
        self.tag = "+".join(safe_name(j.strip()) for j in args.judge.split(",") if j.strip())

    def common(self, concurrency: int | None) -> list[str]:
        a = self.args
        out = [f"--{k}={v}" for k, v in (("concurrency", concurrency), ("timeout", a.timeout),
                                          ("models_file", a.models_file), ("cache_path", a.cache_path)) if v]
        return out + (["--no_cache"] if a.no_cache else [])

    def result(self, short: str) -> Path:
        return self.results / f"{safe_name(self.name)}_merged_{short}.csv"

    def stage4(self) -> int:
        from ..stages.alignment import main as stage4

        a = self.args
        for short in SETS:
            argv = [f"--model={a.model}", f"--name={self.name}", f"--input_file={short}",
                    f"--output_path={self.result(short)}", f"--max_tokens={a.max_tokens}",
                    f"--limit_seed={a.limit_seed}", *self.common(a.concurrency)]
            argv += [f"--{k}={v}" for k, v in (("limit", a.limit), ("system_prompt", a.system_prompt),
                                                ("rules", a.rules), ("base_url", a.base_url),
                                                ("api_key_env", a.api_key_env),
                                                ("reasoning_effort", a.reasoning_effort)) if v is not None]
            code = self.step(stage4, argv, "stage 4", f"target {self.name} on {short}", "results", self.result(short))
            if code:
                return code
        return 0

    def stage5(self) -> int:
        from ..stages.check_response import main as stage5

        a = self.args
        for short in SETS:
            out = self.judged_dir / f"{self.result(short).stem}_response_check_merged_{self.tag}.csv"
            argv = [f"--check_model={a.judge}", f"--input_file={self.result(short)}", f"--output_path={out}",
                    f"--max_tokens={a.judge_max_tokens}", f"--audit={a.audit}", *self.common(a.judge_concurrency)]
            argv += [f"--{k}={v}" for k, v in (("base_url", a.judge_base_url), ("api_key_env", a.judge_api_key_env),
                                                ("reasoning_effort", a.judge_reasoning_effort)) if v is not None]
            if a.judge_sample:
                argv += [f"--sample={a.judge_sample}", f"--seed={a.judge_seed}"]
            code = self.step(stage5, argv, "stage 5", f"judge {a.judge} on {short}", "judged", out)
            if code:
                return code
        return 0

    def step(self, main, argv: list[str], stage: str, who: str, kind: str, output: Path) -> int:
        """One stage run; a non-zero code or an output with nothing usable stops the run."""
        from ..tables.usable import EXIT_NOTHING_USABLE, why_unusable

        print(f"\n=== {stage}: {who}", flush=True)
        code = main(argv, prog=f"orbench eval ({stage})")
        if code == 3:
            print(f"orbench eval: stopped at {stage} ({who}): some rows failed (they are in its failed file); "
                  f"run the same command again to retry them", file=sys.stderr)
        if code:
            return code
        reason = why_unusable(kind, [output])
        if reason:
            print(f"orbench eval: stopped at {stage} ({who}): {reason}", file=sys.stderr)
            return EXIT_NOTHING_USABLE
        return 0

    def report(self) -> int:
        from ..report.cli import main as report

        print("\n=== report: beside the paper's 32 models", flush=True)
        inputs = [str(self.results)] + ([str(self.judged_dir)] if self.judged else [])
        code = report([*inputs, "--output_dir", str(self.report_dir), "--compare_paper"], prog="orbench eval (report)")
        if code == 0:
            print(f"\nrun folder: {self.dir}\nreport:     {self.report_dir / 'report.html'} "
                  f"(table: {self.report_dir / 'summary.md'}, figure: {self.report_dir / 'tradeoff.png'})")
        return code

    def record(self, endpoints) -> None:
        """eval.run.json: each role's model, provider and base URL (never a key), and the settings."""
        a = self.args
        roles: dict[str, list[dict[str, str]]] = {}
        for role, ep in endpoints:
            where = "embedded" if ep.is_embedded else " ".join(ep.base_urls)
            cap, effort = (a.max_tokens, a.reasoning_effort) if role == "target" else (
                a.judge_max_tokens, a.judge_reasoning_effort)
            roles.setdefault(role, []).append({"model": ep.name, "model_id": ep.model, "provider": ep.provider,
                                               "base_url": where, "api_key_env": ep.api_key_env,
                                               "sent": ep.params.info(0.0, cap, effort)})
        info = {"command": "orbench eval", "target": roles["target"][0], "judge": roles.get("judge"),
                "sets": list(SETS), "limit": a.limit, "limit_seed": a.limit_seed, "max_tokens": a.max_tokens,
                "judge_max_tokens": a.judge_max_tokens, "reasoning_effort": a.reasoning_effort,
                "judge_reasoning_effort": a.judge_reasoning_effort,
                "judge_sample": a.judge_sample, "judge_seed": a.judge_seed,
                "audit": a.audit if self.judged else 0, "system_prompt": a.system_prompt}
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / "eval.run.json.tmp"
        tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.dir / "eval.run.json")


if __name__ == "__main__":
    sys.exit(main())
