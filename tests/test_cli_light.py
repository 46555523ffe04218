"""Every command's --help answers without importing a heavy module (pandas, numpy, scipy,
openai, matplotlib, ... and the refusal detector's checkers): they are imported where they
are used. What each command imports is its sys.modules at exit, so this checks the
imports, not the clock (the times are in benchmarks/bench_help.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orbench.testing.commands import HEAVY, commands, console_scripts, heavy_in, help_imports, is_python

COMMANDS = commands()
PYTHON_COMMANDS = {name: argv for name, argv in COMMANDS.items() if is_python(argv)}


@pytest.mark.parametrize("name", sorted(PYTHON_COMMANDS))
def test_help_imports_nothing_heavy(name):
    proc, modules = help_imports(PYTHON_COMMANDS[name])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout  # it printed its help, after importing what that needs
    assert any(m.startswith("orbench") for m in modules)  # the listing saw the command's own imports
    assert heavy_in(modules) == [], f"{name} --help imports {heavy_in(modules)}: import them where they are used"


def test_the_pipeline_script_answers_help_itself():
    proc = subprocess.run(COMMANDS["run_pipeline.sh"] + ["--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--run_dir" in proc.stdout and proc.stderr == ""


def test_every_console_script_and_stage_folder_is_listed():
    assert set(console_scripts()) <= set(COMMANDS)
    stages = [name for name in COMMANDS if name.endswith(".py") and "/" in name]
    assert len(stages) >= 5


def test_the_check_sees_a_heavy_import():
    # The same reading on a command that does import pandas: the guard above can fail.
    proc, modules = help_imports([sys.executable, "-c", "import sys, pandas; print('usage: x')"])
    assert proc.returncode == 0
    assert "pandas" in heavy_in(modules) and "numpy" in heavy_in(modules)
    assert heavy_in(["orbench.refusal", "orbench.refusal.names"]) == []
    assert heavy_in(["orbench.refusal.verdicts"]) == ["orbench.refusal.verdicts"]
    assert "openai" in HEAVY
