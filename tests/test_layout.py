"""The package's shape: the fake server's modules, import cycles, declared dependencies.

The imports are read from the source by tests/import_graph.py (run it for the full lists).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests import import_graph

TESTING = import_graph.REPO_ROOT / "orbench" / "testing"

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


def test_no_import_cycle_touches_orbench_testing():
    graph = import_graph.internal_graph()
    folded = import_graph.package_graph(graph)
    for group in import_graph.strongly_connected(graph):
        assert not any(m.startswith("orbench.testing") for m in group), group
    for group in import_graph.strongly_connected(folded):
        assert "orbench.testing" not in group, group


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


def _long_functions(path: Path, limit: int) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > limit]


def test_fake_server_modules_are_small():
    for path in sorted(TESTING.glob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 400, f"{path.name}: {lines} lines"
        assert _long_functions(path, 60) == []


def test_every_third_party_import_is_declared():
    assert import_graph.undeclared() == {}


def test_undeclared_import_is_found(tmp_path):
    (tmp_path / "orbench").mkdir()
    (tmp_path / "orbench" / "__init__.py").write_text("import numpy\nimport json\nfrom . import x\n")
    (tmp_path / "orbench" / "x.py").write_text("def f():\n    import pandas\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["pandas>=2"]\n')
    assert import_graph.undeclared(tmp_path) == {"numpy": ["numpy"]}
