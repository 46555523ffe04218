"""Names a package exports but imports on first use (PEP 562's module ``__getattr__``).

A package's ``__init__`` runs whenever any of its modules is imported, so whatever it imports
at the top every command pays for, ``--help`` included. A package whose public names live in
heavy modules (pandas, numpy, matplotlib, or a detector that compiles its patterns) lists them
here instead::

    __getattr__, __dir__ = lazy_exports(__name__, globals(), {"build": ("Report", "build_report")})

``from package import Report`` and ``package.Report`` work as before; the first use imports
``package.build`` and keeps the name in the package, so later reads are plain attribute reads.
Keep the same imports under ``if TYPE_CHECKING:`` for type checkers and the import graph.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable, Iterable, Mapping


def lazy_exports(package: str, namespace: dict[str, Any],
                 modules: Mapping[str, Iterable[str]]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name of ``modules[m]`` is
    read from ``package.m`` on first use and then stored in ``namespace`` (the package's globals)."""
    module_of = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *module_of})

    return __getattr__, __dir__
