"""The package's shape: module and function sizes, the fake server's modules, import cycles,
declared dependencies.

The imports are read from the source by tests/import_graph.py (run it for the full lists).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests import import_graph

PACKAGE = import_graph.REPO_ROOT / "orbench"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

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
