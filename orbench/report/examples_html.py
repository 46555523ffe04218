"""The examples and disagreements views of the HTML page (rows from examples.py).

This module picks the rows and works out what each shows; templates/examples.html.j2 words
the views and lays them out.
Prompts, responses, categories and verdicts are untrusted text: the template engine escapes
every piece, in cells and in attributes alike, and none is ever put into the script (its
style and script are templates/examples.css and examples.js).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from orbench.report.build import Report
from orbench.report.common import DATASET_TITLES, category_order
from orbench.report.examples import DISAGREEMENTS, MISSES, Example, ExampleSet, describe_scoring
from orbench.report.htmlkit import macros

PREVIEW_CHARS = 140
SHORT_TITLES = {"safe": "80K", "hard": "Hard-1K", "toxic": "Toxic"}

HEAD = ["model", "set", "category", "prompt", "response", "keyword", "refusal score", "judge",
        "the rate counts it as"]

KIND_TITLES = {MISSES: "misses (toxic prompts answered)",
               DISAGREEMENTS: "keyword and judge disagree"}


def _kind_title(kind: str) -> str:
    return KIND_TITLES.get(kind, "over-refusals (safe prompts refused)")


def _preview(text: str) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    if not flat:
        return "(empty response)"
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS].rstrip() + "…"


@dataclass(frozen=True)
class Row:
    """An example and what the view shows of it beside its fields."""

    ex: Example
    set_title: str
    preview: str
    scoring: str


@dataclass(frozen=True)
class ViewRows:
    """A view's rows and its filters' options, (value, title) each."""

    head: Sequence[str]
    rows: Sequence[Row]
    models: Sequence[tuple[str, str]]
    sets: Sequence[tuple[str, str]]
    categories: Sequence[tuple[str, str]]


def _view_rows(sets: Sequence[ExampleSet]) -> ViewRows:
    rows = [ex for s in sets for ex in s.rows]
    return ViewRows(
        head=HEAD,
        rows=[Row(ex, SHORT_TITLES[ex.dataset], _preview(ex.response), describe_scoring(ex.scored_by))
              for ex in rows],
        models=[(m, m) for m in dict.fromkeys(ex.model for ex in rows)],
        sets=[(d, SHORT_TITLES[d]) for d in dict.fromkeys(ex.dataset for ex in rows)],
        categories=[(c, c) for c in category_order({ex.category for ex in rows})])


def _cap_line(s: ExampleSet, cap: int, seed: int) -> str:
    where = f"{s.model} · {DATASET_TITLES[s.dataset]} · {_kind_title(s.kind)}"
    if s.total == 0:
        return f"{where}: none"
    if len(s.rows) < s.total:
        return (f"{where}: showing {len(s.rows):,} of {s.total:,} rows, chosen at random "
                f"with seed {seed}")
    return f"{where}: all {s.total:,} row{'s' if s.total != 1 else ''}"


def _shown(report: Report) -> bool:
    ex = report.examples
    return ex is not None and ex.cap > 0 and bool(ex.examples)


def nav(report: Report) -> str:
    """Links down to the views, under the page's title: the views sit below the figures."""
    return macros("examples.html.j2").nav() if _shown(report) else ""


def _caps(sets: Sequence[ExampleSet], cap: int, seed: int) -> list[str]:
    return [_cap_line(s, cap, seed) for s in sets]


def examples_view(report: Report) -> str:
    if not _shown(report):
        return ""
    ex = report.examples
    return macros("examples.html.j2").examples(ex.cap, ex.seed, _caps(ex.examples, ex.cap, ex.seed),
                                               _view_rows(ex.examples))


def disagreements_view(report: Report) -> str:
    if not _shown(report):
        return ""
    ex, views = report.examples, macros("examples.html.j2")
    if not ex.compared:
        unsent = sorted(j for j, a in report.judges.items() if a.nothing_judged)
        return views.no_disagreements(", ".join(unsent))
    failed = sorted(j for j, a in report.judges.items() if a.failed)
    return views.disagreements(ex.cap, ex.seed, ", ".join(failed),
                               _caps(ex.disagreements, ex.cap, ex.seed), _view_rows(ex.disagreements))
