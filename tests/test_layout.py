"""The package's shape: module and function sizes, the fake server's modules, import cycles,
the layer order (no import runs upward), declared dependencies, the old module paths.

The imports are read from the source by tests/import_graph.py (run it for the full lists).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from orbench import _moved
from tests import import_graph

PACKAGE = import_graph.REPO_ROOT / "orbench"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

# Each folder of orbench/ is one layer (docs/architecture.md). A module may import modules of its
# own folder and of lower layers; two folders on one layer are peers and import neither the other.
# The root's own modules sit at 0 (what every layer may import) or at the top (the commands).
LAYERS = {
    "orbench": 0, "orbench.errors": 0, "orbench.stopping": 0, "orbench.lazy": 0, "orbench._moved": 0,
    "orbench.testing": 0,
    "orbench.protocol": 1,
    "orbench.engine": 2,
    "orbench.tables": 3,
    "orbench.refusal": 4,
    "orbench.statistics": 5, "orbench.batch": 5,
    "orbench.run": 6,
    "orbench.judge_audit": 7, "orbench.inspect_eval": 7,
    "orbench.stages": 8, "orbench.report": 8,
    "orbench.commands": 9,
    "orbench.__main__": 10, "orbench.evaluate_refusal": 10,  # python -m orbench[.evaluate_refusal]
}
ROOT_BASE = ("orbench", "orbench.errors", "orbench.stopping", "orbench.lazy", "orbench._moved")  # one folder: the root's base

# Every module-level name of orbench/testing/fake_openai.py before it was split (commit
# 612f62b), less its private helpers; tests in other branches import these from there.
FAKE_OPENAI_NAMES = [
    "HOST", "DEFAULT_MODEL", "REFUSE_MARKER", "REFUSAL_TEXT", "ECHO_PREFIX", "ECHO_CHARS",
    "Reply", "Status", "Hang", "Malformed", "EmptyChoices", "NullContent", "ContentFilter",
    "Behaviour", "BEHAVIOUR_TYPES", "Responder", "RequestRecord", "content_text",
    "last_user_message", "echo_responder", "refuse_responder", "BUILTIN_RESPONDERS",
    "resolve_responder", "FakeOpenAIServer", "build_arg_parser", "server_from_args", "main",
    "_ERROR_DEFAULTS",  # tests/test_llm_core.py patches an entry of it
]


@pytest.mark.parametrize("name", FAKE_OPENAI_NAMES)
def test_fake_openai_still_exports(name):
    fake_openai = importlib.import_module("orbench.testing.fake_openai")
    assert hasattr(fake_openai, name)


def test_package_exports_are_the_modules_objects():
    import orbench.testing as testing
    from orbench.testing import fake_openai

    for name in testing.__all__:
        assert getattr(testing, name) is getattr(fake_openai, name)
    # One class per behaviour wherever it is imported from, so isinstance checks agree.
    from orbench.testing.fake_chat import Status

    assert fake_openai.Status is Status


def _cycles(graph) -> list[str]:
    """Each cycle as one path through it, e.g. 'a:3 -> b:10 (deferred)'."""
    return [" -> ".join(f"{e.via or e.source}:{e.line}{' (deferred)' if e.deferred else ''}"
                        for e in import_graph.cycle_path(graph, group))
            for group in import_graph.strongly_connected(graph)]


def test_no_import_cycle():
    # Between modules, and between subpackages folded into one node each (an upward arrow,
    # such as refusal/train.py once importing orbench.cli, which imports the registry,
    # which imports orbench.refusal).
    graph = import_graph.internal_graph()
    assert _cycles(graph) == []
    assert _cycles(import_graph.package_graph(graph)) == []


def test_cycle_finder_sees_a_deferred_cycle(tmp_path):
    # The shape the fake server had: a function-level import one way, TYPE_CHECKING the other.
    pkg = tmp_path / "orbench" / "testing"
    pkg.mkdir(parents=True)
    (tmp_path / "orbench" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .b import B\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\nB = 1\n")
    (pkg / "c.py").write_text("from . import a\n")
    graph = import_graph.internal_graph(tmp_path)
    assert import_graph.strongly_connected(graph) == [["orbench.testing.a", "orbench.testing.b"]]
    assert [e.deferred for e in import_graph.cycle_path(graph, ["orbench.testing.a", "orbench.testing.b"])] == [True, True]


def test_cycle_finder_sees_a_cycle_between_subpackages(tmp_path):
    # The shape issue 20 found: refusal/train.py -> cli -> registry -> (deferred) refusal.
    # No module imports itself back, so only the graph of subpackages shows it.
    root = tmp_path / "orbench"
    (root / "refusal").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "refusal" / "__init__.py").write_text("GUESS = 1\n")
    (root / "refusal" / "train.py").write_text("from orbench.cli import parse\n")
    (root / "cli.py").write_text("from .registry import resolve\ndef parse():\n    pass\n")
    (root / "registry.py").write_text("def resolve():\n    from .refusal import GUESS\n")
    graph = import_graph.internal_graph(tmp_path)
    assert import_graph.strongly_connected(graph) == []
    assert import_graph.strongly_connected(import_graph.package_graph(graph)) == [
        ["orbench.cli", "orbench.refusal", "orbench.registry"]]


def _folder(module: str) -> str | None:
    """The LAYERS key a module belongs to: its folder (orbench.engine for orbench.engine.llm),
    the root (orbench) for the root's base modules, or itself for a command at the root."""
    parts = module.split(".")
    folder = ".".join(parts[:2])
    if module in ROOT_BASE:
        return "orbench"
    if len(parts) > 1 and folder in LAYERS and folder not in ROOT_BASE:
        return folder
    return module if module in LAYERS else None


def _upward(graph) -> list[str]:
    found = []
    for module, edges in sorted(graph.items()):
        source = _folder(module)
        for edge in edges:
            target = _folder(edge.target)
            if source is None or target is None or source == target:
                continue
            if LAYERS[target] >= LAYERS[source]:
                found.append(f"{module}:{edge.line}{' (deferred)' if edge.deferred else ''} -> {edge.target}"
                             f" ({source} {LAYERS[source]} -> {target} {LAYERS[target]})")
    return found


def test_every_module_has_a_layer():
    assert [m for m in import_graph.internal_graph() if _folder(m) is None] == []


def test_no_import_runs_upward():
    assert _upward(import_graph.internal_graph()) == []


def test_layer_check_sees_upward_imports(tmp_path):
    # Both styles, at the top and deferred; a peer on the same layer counts too.
    root = tmp_path / "orbench"
    for folder in ("protocol", "engine", "statistics", "batch"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "engine" / "llm.py").write_text("from ..protocol import x\n")  # downward: fine
    (root / "protocol" / "x.py").write_text("from ..engine.llm import send\n")
    (root / "protocol" / "y.py").write_text("def f():\n    from orbench.engine import llm\n")
    (root / "batch" / "plan.py").write_text("import orbench.statistics\n")
    found = _upward(import_graph.internal_graph(tmp_path))
    assert found == [
        "orbench.batch.plan:1 -> orbench.statistics (orbench.batch 5 -> orbench.statistics 5)",
        "orbench.protocol.x:1 -> orbench.engine.llm (orbench.protocol 1 -> orbench.engine 2)",
        "orbench.protocol.y:2 (deferred) -> orbench.engine.llm (orbench.protocol 1 -> orbench.engine 2)",
    ]


def test_each_package_says_what_it_holds_and_may_import():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert doc and "import" in doc.splitlines()[0], init  # the first line says what it may import


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_old_module_path_is_the_new_module_and_warns(old):
    new = importlib.import_module(_moved.MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {_moved.MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is new and sys.modules[old] is new
    assert module.__spec__.name == _moved.MOVED[old]  # the alias did not rename the module
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.import_module(old) is new  # once imported, no second warning


def test_old_module_path_runs_with_python_m():
    old = "orbench.coverage"  # the docs named `python -m orbench.coverage` before the move
    done = subprocess.run([sys.executable, "-m", old, "--help"], capture_output=True, text=True,
                          cwd=import_graph.REPO_ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and f"note: {old} moved to {_moved.MOVED[old]}" in done.stderr


def test_moved_paths_are_gone_from_the_package():
    for old in _moved.MOVED:
        assert importlib.util.find_spec(old).origin == importlib.util.find_spec(_moved.MOVED[old]).origin
        assert not (import_graph.REPO_ROOT / Path(*old.split("."))).with_suffix(".py").exists()


def _long_functions(path: Path, limit: int) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > limit]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(import_graph.REPO_ROOT)))
def test_modules_and_functions_are_small(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines"
    assert _long_functions(path, MAX_FUNCTION_LINES) == []


def test_size_check_sees_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\nasync def long():\n{body}")
    assert _long_functions(tmp_path / "m.py", MAX_FUNCTION_LINES) == [
        f"m.py:5 long ({MAX_FUNCTION_LINES + 1} lines)"]


def test_every_third_party_import_is_declared():
    assert import_graph.undeclared() == {}


def test_undeclared_import_is_found(tmp_path):
    (tmp_path / "orbench").mkdir()
    (tmp_path / "orbench" / "__init__.py").write_text("import numpy\nimport json\nfrom . import x\n")
    (tmp_path / "orbench" / "x.py").write_text("def f():\n    import pandas\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["pandas>=2"]\n')
    assert import_graph.undeclared(tmp_path) == {"numpy": ["numpy"]}
