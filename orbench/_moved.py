"""Old module paths, from before orbench/ was grouped into packages by layer (CHANGELOG.md).

For one release an old path still works: ``import orbench.llm`` (or ``from orbench.llm import
LLMClient``) gives the very module ``orbench.engine.llm``, with a DeprecationWarning that names
the new path, and ``python -m orbench.coverage`` runs ``orbench.statistics.coverage`` with a
note on stderr. The finder is consulted only after the normal ones have found nothing, so it
never shadows a real module. Imports nothing of the package: ``orbench/__init__.py`` installs it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Optional, Sequence

# old path -> new path
MOVED: dict[str, str] = {
    "orbench.datasets": "orbench.stages.datasets",
    "orbench.console": "orbench.commands.console",
    "orbench.eval_command": "orbench.commands.eval_command",
    "orbench.eval_plan": "orbench.commands.eval_plan",
    "orbench.pipeline_preflight": "orbench.commands.pipeline_preflight",
    "orbench.cli": "orbench.run.cli",
    "orbench.runner": "orbench.run.runner",
    "orbench.rounds": "orbench.run.rounds",
    "orbench.spec": "orbench.run.spec",
    "orbench.runplan": "orbench.run.runplan",
    "orbench.agreement": "orbench.statistics.agreement",
    "orbench.coverage": "orbench.statistics.coverage",
    "orbench.design": "orbench.statistics.design",
    "orbench.estimate": "orbench.statistics.estimate",
    "orbench.estimators": "orbench.statistics.estimators",
    "orbench.judged_sample": "orbench.statistics.judged_sample",
    "orbench.planning": "orbench.statistics.planning",
    "orbench.simulation": "orbench.statistics.simulation",
    "orbench.stats": "orbench.statistics.stats",
    "orbench.stratified": "orbench.statistics.stratified",
    "orbench.table_io": "orbench.tables.table_io",
    "orbench.inputs": "orbench.tables.inputs",
    "orbench.hub": "orbench.tables.hub",
    "orbench.published": "orbench.tables.published",
    "orbench.resume": "orbench.tables.resume",
    "orbench.naming": "orbench.tables.naming",
    "orbench.runinfo": "orbench.tables.runinfo",
    "orbench.usable": "orbench.tables.usable",
    "orbench.sampling": "orbench.tables.sampling",
    "orbench.llm": "orbench.engine.llm",
    "orbench.retry": "orbench.engine.retry",
    "orbench.cache": "orbench.engine.cache",
    "orbench.backends": "orbench.engine.backends",
    "orbench.jobs": "orbench.engine.jobs",
    "orbench.registry": "orbench.engine.registry",
    "orbench.providers": "orbench.engine.providers",
    "orbench.local_server": "orbench.engine.local_server",
    "orbench.preflight": "orbench.engine.preflight",
    "orbench.constants": "orbench.protocol.constants",
    "orbench.prompts": "orbench.protocol.prompts",
    "orbench.parsing": "orbench.protocol.parsing",
    "orbench.verdict": "orbench.protocol.verdict",
    "orbench.summary": "orbench.protocol.summary",
    "orbench.voting": "orbench.protocol.voting",
}


def note(old: str) -> str:
    return f"{old} moved to {MOVED[old]} (CHANGELOG.md); the old path works for one release only"


class _AliasSpec(importlib.machinery.ModuleSpec):
    """The old name's spec. Its parent is the new module's package, so that when ``python -m
    OLD`` runs the new module's code as __main__, its relative imports resolve where it lives."""

    @property
    def parent(self) -> str:
        return MOVED[self.name].rpartition(".")[0]


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: Optional[importlib.machinery.ModuleSpec] = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # stacklevel 2: warnings skips the import system's own frames, so this names the importer.
        warnings.warn(note(spec.name), DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec  # the import system set the old name's spec on it

    def get_code(self, fullname: str):
        """``python -m OLD``: the new module's code (runpy runs it as __main__)."""
        print(f"note: {note(fullname)}", file=sys.stderr)
        spec = importlib.util.find_spec(self.new)
        return spec.loader.get_code(self.new)


class MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: object = None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        origin = getattr(importlib.util.find_spec(new), "origin", None)
        return _AliasSpec(fullname, _AliasLoader(new), origin=origin)


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
