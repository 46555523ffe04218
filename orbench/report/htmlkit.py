"""The HTML page's template engine and the table cells its templates draw.

The page is built from Jinja2 templates in templates/ (package data), autoescaped: every
value a template prints is escaped by the engine, so prompts, responses, model names and
categories are data, never markup, without any escaping of ours. Two kinds of text reach the
page unescaped: what our own macros return (Markup: its values were escaped as it was made)
and the page's own style sheet and script (templates/*.css, *.js), which page.html.j2 marks
safe. Python code calls a template's macros (macros()) with plain values; it writes no HTML.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from jinja2 import Environment, PackageLoader, StrictUndefined

_LOADER = PackageLoader("orbench.report", "templates")
ENV = Environment(loader=_LOADER, autoescape=True, undefined=StrictUndefined,
                  trim_blocks=True, lstrip_blocks=True)


def macros(template: str) -> Any:
    """A template's macros, to call from Python: each returns Markup, every value escaped."""
    return ENV.get_template(template).module


def asset(name: str) -> str:
    """A file of templates/ as it is, not rendered: the page's own style sheet or script."""
    return _LOADER.get_source(ENV, name)[0]


@dataclass(frozen=True)
class Td:
    """A table cell: its text, what a sortable column sorts it by (data-v), its class."""

    text: str
    v: str | None = None
    cls: str = ""


@dataclass(frozen=True)
class Tr:
    cells: Sequence[Td]
    cls: str = ""


def td(text: object, value=None, cls: str = "") -> Td:
    if value is None:
        v = None
    elif isinstance(value, float):
        v = "" if math.isnan(value) else f"{value:.6g}"
    else:
        v = str(value)
    return Td(str(text), v, cls)


def table(head: Sequence[str], rows: Sequence[Tr], wide: bool = False) -> str:
    """A sortable table; wide ones scroll sideways in their own box."""
    return macros("kit.html.j2").table(head, rows, wide)


def data_uri(path: Path, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")
