"""The `orbench` command: one entry point, a subcommand per tool.

Each subcommand is the same parser and code as the script it wraps (the five stage scripts
keep their names and flags; `orbench query --help` is stage 4's --help under another name).
A subcommand's module is imported only when it runs, so `orbench --help` imports nothing
but the standard library.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Sequence

# name -> (module, function, the script it wraps, what it does). Listed in `orbench --help`.
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "eval": ("orbench.commands.eval_command", "main", "",
             "measure a model: stage 4 on OR-Bench-Hard-1K and -Toxic, an audited judge, the report"),
    "pipeline": ("orbench.commands.console", "pipeline", "run_pipeline.sh",
                 "build the sets and measure two targets, end to end"),
    "generate": ("orbench.stages.generate", "main", "toxic_prompt_generator/generate_toxic_promt_from_category.py",
                 "stage 1: toxic seed prompts for one category"),
    "rewrite": ("orbench.stages.rewrite", "main", "rewritter/mixtral_rewrite_only.py",
                "stage 2: rewrite each seed into seemingly toxic prompts"),
    "moderate": ("orbench.stages.moderate", "main", "moderator/moderate_only.py",
                 "stage 3: moderate prompts (or responses), one moderator or an ensemble"),
    "query": ("orbench.stages.alignment", "main", "alignment_checker/gpt3_4_alignment_checker.py",
              "stage 4: send prompts to a target model, flag refusals"),
    "judge": ("orbench.stages.check_response", "main", "response_checker/check_response.py",
              "stage 5: an LLM judge labels each response, audited on human labels"),
    "sets": ("orbench.stages.datasets", "main", "build_datasets.py", "build the safe, toxic and hard sets"),
    "report": ("orbench.report.cli", "main", "python -m orbench.report",
               "tables, the trade-off figure and report.html from result files"),
    "evaluate-refusal": ("orbench.refusal.command", "main", "python -m orbench.evaluate_refusal",
                         "score a refusal detector (or a judge's column) against human labels"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: orbench COMMAND [options]   (orbench COMMAND --help: that command's options)", "",
             "Over-refusal benchmark (OR-Bench) commands:"]
    for name, (_, _, script, what) in COMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {what}" + (f" [{script}]" if script else ""))
    lines += ["", "Start with: orbench eval --model PROVIDER/MODEL --judge PROVIDER/MODEL (orbench eval --help).",
              "Exit codes: 0 done; 3 some rows failed (run the same command again); 2 a user's mistake or a",
              "fatal endpoint error, in one line; 130 interrupted."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    if args[0] == "--version":
        from .. import __version__

        print(f"orbench {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"orbench: error: unknown command '{name}'; choose one of: {', '.join(COMMANDS)} (see orbench --help)",
              file=sys.stderr)
        return 2
    module, function, _, _ = COMMANDS[name]
    return int(getattr(importlib.import_module(module), function)(rest, prog=f"orbench {name}") or 0)


def pipeline_script() -> Path:
    return Path(__file__).resolve().parents[2] / "run_pipeline.sh"


def pipeline(argv: Sequence[str], prog: str = "run_pipeline.sh") -> int:
    """`orbench pipeline`: run_pipeline.sh with these flags, under this Python."""
    script = pipeline_script()
    if not script.is_file():
        print(f"{prog}: error: run_pipeline.sh is not beside this install ({script.parent}); the pipeline runs "
              f"from a clone of the repository (pip install -e .)", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.setdefault("PYTHON", sys.executable)
    sys.stdout.flush()
    os.execvpe("bash", ["bash", str(script), *argv], env)
    return 2  # not reached


def _script(name: str, prog: str) -> int:
    module, function, _, _ = COMMANDS[name]
    return int(getattr(importlib.import_module(module), function)(sys.argv[1:], prog=prog) or 0)


# The console scripts declared in pyproject.toml besides `orbench`; each names itself in --help.
def report_script() -> int:
    return _script("report", "orbench-report")


def evaluate_refusal_script() -> int:
    return _script("evaluate-refusal", "orbench-evaluate-refusal")


def build_datasets_script() -> int:
    return _script("sets", "orbench-build-datasets")
