"""Several commands of one pipeline step, one after another, in one Python process.

    python -m orbench.commands.chain [--name NAME] -- MODE COMMAND... [::: MODE COMMAND...]

run_pipeline.sh runs each step's stage commands (one per category, target or file) through
this. Each COMMAND is what a shell would run after the Python: a script and its arguments
(``alignment_checker/gpt3_4_alignment_checker.py --model=local ...``) or ``-m MODULE ...``. It
runs as ``__main__`` with that argv, exactly as it would in a process of its own: the same
files, run record, messages and exit code. What it saves is the start-up each command would
pay again (importing openai, pandas and the refusal detector: about 2 s on a 2-core machine,
against 0.3 s for the next command in the same process).

MODE says what a non-zero exit means:
  stage   exit 3 (it finished, some rows failed): stop with 3 and say what to re-run; any
          other non-zero: stop with that code;
  short   exit 3 (it stopped short of its count, as stage 1 may): say so and go on;
  check   any non-zero: stop with that code (the command has said why).
The chain exits 0 when every command went through, else with the code that stopped it.
"""

from __future__ import annotations

import runpy
import shlex
import sys
from typing import Sequence

from ..run.cli import EXIT_ROWS_FAILED  # a stage's exit code when some rows failed (stage 1: stopped short)

SEPARATOR = ":::"
MODES = ("stage", "short", "check")


def split(words: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The commands between separators, each as (mode, argv after the Python)."""
    commands, current = [], []
    for word in [*words, SEPARATOR]:
        if word != SEPARATOR:
            current.append(word)
            continue
        if current:
            mode, argv = current[0], current[1:]
            if mode not in MODES or not argv or argv == ["-m"]:
                raise ValueError(f"each command starts with one of {', '.join(MODES)} and then the command: "
                                 f"{shlex.join(current)}")
            commands.append((mode, argv))
        current = []
    return commands


def run_one(argv: list[str]) -> int:
    """Run a script or ``-m module`` as ``__main__`` with this argv; its exit code."""
    saved = sys.argv
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            runpy.run_path(argv[0], run_name="__main__")
        return 0
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    finally:
        sys.argv = saved
        sys.stdout.flush()
        sys.stderr.flush()


def run(commands: list[tuple[str, list[str]]], name: str) -> int:
    for mode, argv in commands:
        code = run_one(argv)
        if code == 0:
            continue
        if mode == "short" and code == EXIT_ROWS_FAILED:
            print(f"({_shown(argv)} stopped short; continuing with what it produced)", flush=True)
            continue
        if mode == "stage" and code == EXIT_ROWS_FAILED:
            print(f"{name}: stopped: some rows failed in this stage (see its *failed* file). Re-run this script "
                  f"with the same settings to retry them (finished rows are kept), or re-run the stage alone: "
                  f"{shlex.join([sys.executable, *argv])}", file=sys.stderr)
        return code
    return 0


def _shown(argv: list[str]) -> str:
    """A command named by its script (or module) and its first option: 'generate ... --category=hate'."""
    head = argv[1] if argv[0] == "-m" else argv[0].rsplit("/", 1)[-1]
    rest = argv[2:] if argv[0] == "-m" else argv[1:]
    return f"{head} {rest[0]}" if rest else head


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    name = "chain"
    if words[:1] == ["--name"] and len(words) >= 2:
        name, words = words[1], words[2:]
    if words[:1] == ["--"]:
        words = words[1:]
    try:
        commands = split(words)
    except ValueError as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 2
    try:
        return run(commands, name)
    except KeyboardInterrupt:  # between two commands (a stage itself says so and returns 130)
        print("interrupted: finished rows are saved; run the same command again to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
