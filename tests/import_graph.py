"""The package's imports, read from its source (nothing is imported): cycles and undeclared dependencies.

Run ``python tests/import_graph.py`` from the repository root to print both lists; the layout
tests (``tests/test_layout.py``) hold the package to them.

- An edge ``a -> b`` is any import of module ``b`` in module ``a``: at the top, inside a
  function, or under ``if TYPE_CHECKING`` (a deferred import hides a cycle; it does not remove
  it). ``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``.
- A third-party import is one whose top-level name is neither the standard library's nor the
  package's own. It is declared when a distribution that provides it is named in
  ``pyproject.toml``, in the core dependencies or in an extra.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "orbench"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (dotted)
    line: int
    deferred: bool  # inside a function or under `if TYPE_CHECKING`
    via: str = ""  # in a folded graph: the module inside the subpackage that imports


def module_files(root: Path = REPO_ROOT, package: str = PACKAGE) -> Dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    files = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, deferred: bool = False) -> Iterator[Tuple[ast.AST, bool]]:
    """Every import node below ``node``, with whether it runs later than the module body."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, deferred
        inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), True)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), deferred)
            continue
        yield from _walk(child, inner)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: Set[str]) -> Iterator[Import]:
    """Every import in one file, resolved to absolute dotted names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    for node, deferred in _walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno, deferred)
            continue
        base = _absolute(module, is_package, node)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield Import(module, sub if sub in modules else base, node.lineno, deferred)


def internal_graph(root: Path = REPO_ROOT, package: str = PACKAGE) -> Dict[str, List[Import]]:
    """Module -> its imports of other modules of the package."""
    files = module_files(root, package)
    graph: Dict[str, List[Import]] = {m: [] for m in files}
    for module, path in files.items():
        for imp in imports_of(module, path, set(files)):
            target = imp.target
            while target and target not in files:  # `import a.b.c` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target != module:
                graph[module].append(Import(imp.source, target, imp.line, imp.deferred))
    return graph


def strongly_connected(graph: Dict[str, List[Import]]) -> List[List[str]]:
    """The import cycles: groups of two or more modules that each reach the others (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    groups: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph[node]:
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(groups)


def package_graph(graph: Dict[str, List[Import]], package: str = PACKAGE) -> Dict[str, List[Import]]:
    """The same imports with each subpackage folded into one node (``orbench.refusal.train`` is
    ``orbench.refusal``): a cycle here is an upward arrow between layers, such as a module of a
    subpackage importing something that imports the subpackage back."""
    subpackages = {m for m in graph if m.count(".") == 1 and any(o.startswith(m + ".") for o in graph)}

    def fold(module: str) -> str:
        top = ".".join(module.split(".")[:2])
        return top if top in subpackages else module

    folded: Dict[str, List[Import]] = {fold(m): [] for m in graph}
    for module, edges in graph.items():
        for edge in edges:
            source, target = fold(module), fold(edge.target)
            if source != target:
                folded[source].append(Import(source, target, edge.line, edge.deferred, module))
    return folded


def cycle_path(graph: Dict[str, List[Import]], group: List[str]) -> List[Import]:
    """One closed path through a cycle group, from its first module back to it (breadth first)."""
    members = set(group)
    start = group[0]
    came: Dict[str, Optional[Import]] = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for edge in graph[node]:
            if edge.target == start:
                path = [edge]
                while came[edge.source] is not None:
                    edge = came[edge.source]
                    path.append(edge)
                return path[::-1]
            if edge.target in members and edge.target not in came:
                came[edge.target] = edge
                queue.append(edge.target)
    return []


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions(pyproject: Path = REPO_ROOT / "pyproject.toml") -> Dict[str, str]:
    """Normalised distribution name -> where it is declared ("core" or "extra NAME")."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    where: Dict[str, str] = {}
    groups = [("core", project.get("dependencies", []))]
    groups += [(f"extra {k}", v) for k, v in project.get("optional-dependencies", {}).items()]
    for label, requirements in groups:
        for requirement in requirements:
            name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
            where.setdefault(_normalise(name), label)
    return where


def third_party_imports(root: Path = REPO_ROOT, package: str = PACKAGE) -> Dict[str, List[Import]]:
    """Top-level name of each import from outside the standard library and the package."""
    files = module_files(root, package)
    found: Dict[str, List[Import]] = {}
    for module, path in files.items():
        for imp in imports_of(module, path, set(files)):
            top = imp.target.split(".")[0]
            if top and top != package and top not in sys.stdlib_module_names and top != "__future__":
                found.setdefault(top, []).append(imp)
    return found


def undeclared(root: Path = REPO_ROOT) -> Dict[str, List[str]]:
    """Imported top-level name -> the distributions that provide it, for each one not declared."""
    providers = metadata.packages_distributions()
    declared = declared_distributions(root / "pyproject.toml")
    missing = {}
    for top in sorted(third_party_imports(root)):
        dists = providers.get(top) or [top]  # not installed: only its own name can declare it
        if not any(_normalise(d) in declared for d in dists):
            missing[top] = sorted(dists)
    return missing


def _step(edge: Import) -> str:
    origin = f" (in {edge.via})" if edge.via and edge.via != edge.source else ""
    return f"{edge.source}{origin}:{edge.line}{' deferred' if edge.deferred else ''}"


def main() -> int:
    graph = internal_graph()
    folded = package_graph(graph)
    for title, g in (("between modules", graph), ("between subpackages and modules", folded)):
        groups = strongly_connected(g)
        print(f"import cycles in {PACKAGE}/ {title}: {len(groups)}")
        for group in groups:
            steps = " -> ".join(_step(e) for e in cycle_path(g, group))
            print(f"- {', '.join(group)}\n  e.g. {steps} -> {group[0]}")
    declared = declared_distributions()
    providers = metadata.packages_distributions()
    print("third-party imports:")
    for top, imps in sorted(third_party_imports().items()):
        dists = providers.get(top, [])
        where = sorted({declared[_normalise(d)] for d in dists if _normalise(d) in declared})
        modules = sorted({i.source for i in imps})
        print(f"- {top} ({', '.join(dists) or 'not installed'}): {', '.join(where) or 'UNDECLARED'};"
              f" imported by {len(modules)} module(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
