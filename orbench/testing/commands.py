"""The project's commands as a user types them, and what each one imports for ``--help``.

Shared by tests/test_cli_light.py (no heavy module is imported by ``--help``) and
benchmarks/bench_help.py (how long ``--help`` takes). The list is read from the checkout:
the stage scripts in their five folders, build_datasets.py, run_pipeline.sh, the
``python -m`` commands the docs document, and every console script in pyproject.toml's
``[project.scripts]`` (run as ``python -c``, exactly as pip's wrapper calls it, so a new entry
point is covered without reinstalling).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGE_FOLDERS = ("toxic_prompt_generator", "rewritter", "moderator", "alignment_checker", "response_checker")
MODULE_COMMANDS = ("orbench.report", "orbench.evaluate_refusal", "orbench.stages.datasets")
# What a command's --help must not import: the heavy third-party packages, and the refusal
# detector's checkers (importing them compiles its patterns).
HEAVY = ("pandas", "numpy", "scipy", "openai", "matplotlib", "pyarrow", "jinja2", "huggingface_hub",
         "orbench.refusal.verdicts")
# Put first on PYTHONPATH, this sitecustomize writes the names in sys.modules when the
# command exits: every module it imported, however (an import statement, importlib, ...).
_SITECUSTOMIZE = """import atexit, json, os, sys
atexit.register(lambda: open(os.environ["ORBENCH_MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules))))
"""


def console_scripts(root: Path = ROOT) -> dict[str, str]:
    """name -> "module:function", from pyproject.toml's [project.scripts]."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project.get("scripts", {}))


def commands(root: Path = ROOT, python: str = sys.executable) -> dict[str, list[str]]:
    """Each command's name and the argv that runs it (``--help`` not included)."""
    out: dict[str, list[str]] = {}
    for folder in STAGE_FOLDERS:
        for script in sorted((root / folder).glob("*.py")):
            out[f"{folder}/{script.name}"] = [python, str(script)]
    out["build_datasets.py"] = [python, str(root / "build_datasets.py")]
    out["run_pipeline.sh"] = ["bash", str(root / "run_pipeline.sh")]
    for module in MODULE_COMMANDS:
        out[f"python -m {module}"] = [python, "-m", module]
    for name, target in console_scripts(root).items():
        module, _, function = target.partition(":")
        code = f"import sys; from {module} import {function}; sys.argv[0] = {name!r}; sys.exit({function}())"
        out[name] = [python, "-c", code]
    return out


def is_python(argv: list[str]) -> bool:
    return argv[0] != "bash"


def help_imports(argv: list[str], cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``argv --help`` as it is (a Python command) and return the process and every module
    in its sys.modules when it exited."""
    with tempfile.TemporaryDirectory(prefix="orbench-modules-") as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
        out = Path(tmp) / "modules.json"
        path = os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")]))
        proc = subprocess.run([*argv, "--help"], cwd=cwd, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": path, "ORBENCH_MODULES_OUT": str(out)})
        modules = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
    return proc, modules


def heavy_in(modules: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``heavy`` (or below them) among ``modules``."""
    return sorted({h for m in modules for h in heavy if m == h or m.startswith(h + ".")})
