"""MkDocs hook: the command-line reference, written from the commands' own --help at build time.

The page docs/reference/cli.md holds a marker; this hook replaces it with the `--help` text of
`orbench` and of every subcommand that `orbench --help` lists, each printed by running the
command, so the page cannot drift from the parsers. Where a subcommand wraps an
original script (the five stages, build_datasets.py, run_pipeline.sh), the script is run too and
its help must match the subcommand's except for the program's name: if it does not, the build
fails. Registered under `hooks:` in mkdocs.yml.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PAGE = "reference/cli.md"
MARK = "<!-- cli-reference: generated from each command's --help (docs/hooks/cli_reference.py) -->"
ROOT = Path(__file__).resolve().parents[2]
COLUMNS = "80"  # argparse wraps at the terminal's width: fix it, so every build writes the same page


def _run(argv: list[str]) -> str:
    env = {**os.environ, "COLUMNS": COLUMNS, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout.rstrip()


def _orbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "orbench", *args]


def _script_argv(script: str) -> list[str] | None:
    """How to run the original script a subcommand wraps, or None when it is not a file here."""
    if script.startswith("python -m "):
        return [sys.executable, "-m", script.split()[-1], "--help"]
    path = ROOT / script
    if not script or not path.is_file():
        return None
    if path.suffix == ".sh":
        return ["bash", str(path), "--help"]
    return [sys.executable, str(path), "--help"]


def _same_but_name(ours: str, theirs: str, names: tuple[str, ...]) -> bool:
    def norm(text: str) -> str:
        for name in names:
            text = text.replace(name, "PROG")
        return " ".join(text.split())
    return norm(ours) == norm(theirs)


def _commands(top_help: str) -> dict[str, tuple[str, str]]:
    """name -> (what it does, the script it wraps or ''), read from `orbench --help`'s list, so the
    page follows the commands the tool itself offers, wherever their modules live."""
    block = top_help.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    found = {}
    for line in block.splitlines():
        m = re.match(r"^  (\S+)\s{2,}(.*?)(?: \[([^\]]+)\])?$", line)
        if m:
            found[m.group(1)] = (m.group(2), m.group(3) or "")
    if not found:
        raise RuntimeError("`orbench --help` listed no command")
    return found


def _fence(text: str) -> str:
    return "```text\n" + text.replace("```", "` ` `") + "\n```"


def _section(name: str, what: str, script: str, ours: str, theirs: str | None) -> str:
    lines = [f"## `orbench {name}`", "", what[0].upper() + what[1:] + "."]
    if theirs is not None:
        prog = Path(script).name
        if not _same_but_name(ours, theirs, (f"orbench {name}", script, prog)):
            raise RuntimeError(f"`{script} --help` and `orbench {name} --help` differ beyond the program's name")
        how = (f"`{script}` is the same command" if script.startswith("python -m ")
               else f"The original script `{script}` takes the same options")
        lines += ["", f"{how}: its `--help` prints this text under its own name (checked when this page is built)."]
    return "\n".join(lines + ["", _fence(ours)])


def reference() -> str:
    top = _run(_orbench("--help"))
    commands = _commands(top)
    jobs: dict[str, list[str]] = {}
    for name, (_, script) in commands.items():
        jobs[name] = _orbench(name, "--help")
        argv = _script_argv(script)
        if argv:
            jobs[f"script:{name}"] = argv
    with ThreadPoolExecutor(max_workers=4) as pool:
        out = dict(zip(jobs, pool.map(_run, jobs.values())))
    index = ["| command | what it does |", "| --- | --- |", "| [`orbench`](#orbench) | the list of commands |"]
    index += [f"| [`orbench {name}`](#orbench-{name}) | {what} |" for name, (what, _) in commands.items()]
    parts = ["\n".join(index), "## `orbench`", "", _fence(top)]
    for name, (what, script) in commands.items():
        parts.append(_section(name, what, script, out[name], out.get(f"script:{name}")))
    return "\n\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARK not in markdown:
        raise RuntimeError(f"{PAGE} lost its marker {MARK!r}")
    return markdown.replace(MARK, reference())


