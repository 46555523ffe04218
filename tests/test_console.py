"""The `orbench` command: its subcommands are the stage scripts' own parsers under other names,
the original flags and the added aliases parse alike, the console scripts name themselves in
--help, and --help texts say what the code does (exit codes, bundled sets)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orbench.commands import console
from orbench.run.runner import build_parser
from orbench.stages.alignment import Alignment
from orbench.stages.check_response import CheckResponse
from orbench.stages.generate import Generate
from orbench.stages.moderate import Moderate
from orbench.stages.rewrite import Rewrite

BIN = Path(sys.executable).parent


def help_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        console.main(list(argv))
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_orbench_help_lists_every_command(capsys):
    assert console.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in console.COMMANDS:
        assert f"\n  {name} " in out
    assert console.main([]) == 2


def test_an_unknown_command_is_one_line_and_exit_2(capsys):
    assert console.main(["stage9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown command 'stage9'" in err[0]


@pytest.mark.parametrize("name", [n for n in console.COMMANDS if n != "pipeline"])
def test_each_subcommand_help_names_itself(capsys, name):
    assert help_of(capsys, name, "--help").startswith(f"usage: orbench {name} ")


@pytest.mark.parametrize("spec, command", [(Generate, "generate"), (Rewrite, "rewrite"), (Moderate, "moderate"),
                                           (Alignment, "query"), (CheckResponse, "judge")])
def test_a_stage_subcommand_is_the_stage_scripts_parser(capsys, spec, command):
    # The script's main() passes no doc: its --help is the stage module's docstring, as here.
    doc = sys.modules[spec.__module__].__doc__
    assert help_of(capsys, command, "--help") == build_parser(spec, doc, f"orbench {command}").format_help()


@pytest.mark.parametrize("spec, original, alias", [
    (Rewrite, ["--toxic_seed_path", "s.csv"], ["--input_file", "s.csv"]),
    (Moderate, ["--input_file_path", "m.csv", "--moderator_model", "a,b"], ["--input_file", "m.csv", "--model", "a,b"]),
    (Moderate, ["--input_file_path", "m.csv", "--merge_result=False"], ["--input_file", "m.csv", "--no_merge_result"]),
    (Alignment, ["--input_file", "p.csv", "--merge_result", "False"], ["--input_file", "p.csv", "--no_merge_result"]),
    (CheckResponse, ["--input_file", "r.csv", "--check_model", "gpt4", "--seed", "7"],
     ["--input_file", "r.csv", "--model", "gpt4", "--sample_seed", "7"]),
])
def test_aliases_parse_as_the_original_flags(spec, original, alias):
    parser = build_parser(spec, None)
    assert vars(parser.parse_args(original)) == vars(parser.parse_args(alias))


def test_help_texts_say_what_the_code_does(capsys):
    stage1 = help_of(capsys, "generate", "--help")
    assert "3 stopped short" in " ".join(stage1.split()) and "Exit code 1" not in stage1
    stage4 = " ".join(help_of(capsys, "query", "--help").split())
    assert "(bundled with orbench, read offline)" in stage4
    assert "short name (or-bench-80k, or-bench-hard-1k, or-bench-toxic), read from the Hugging Face Hub" not in stage4


@pytest.mark.parametrize("script", ["orbench-report", "orbench-evaluate-refusal", "orbench-build-datasets"])
def test_console_scripts_print_their_own_names(script):
    path = BIN / script
    if not path.exists():
        pytest.skip(f"{script} is not installed beside {sys.executable} (pip install -e .)")
    shown = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and shown.stdout.startswith(f"usage: {script} ")


def test_orbench_pipeline_is_run_pipeline_sh():
    path = BIN / "orbench"
    if not path.exists():
        pytest.skip(f"orbench is not installed beside {sys.executable} (pip install -e .)")
    shown = subprocess.run([str(path), "pipeline", "--help"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "--hard_k" in shown.stdout and "ORBENCH_LIMIT" in shown.stdout
    bad = subprocess.run([str(path), "pipeline", "--no_such_setting", "1"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "unknown option '--no_such_setting'" in bad.stderr
