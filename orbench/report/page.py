"""The HTML page: one self-contained file, images embedded, tables sortable.

The page opens on what a reader came for (first_section, templates/first.html.j2): the
trade-off figure beside the headline rates and what they are worth, within a 1366x768 screen.
Below it, the page is a list of sections (SECTIONS), each a function of the page's inputs that
returns its HTML, or "" to be left out: it gathers the section's values and calls the
section's macro in templates/sections.html.j2, which lays them out (the engine escapes them:
see htmlkit) and folds method notes and long tables in <details>, which open without script.
The line under the title links down to every section drawn. A new view is one more entry in
that list and one more macro.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

from orbench import __version__
from orbench.report.build import Report
from orbench.report.common import CI_RULE, DATASET_TITLES, TRADEOFF_RULE
from orbench.report.correction import CORRECTION_RULE
from orbench.report.summary_view import corrections_used, score_basis
from orbench.report.figures import TradeoffFigure
from orbench.report.html_tables import (
    category_corrections_html,
    category_html,
    corrections_html,
    files_html,
    judges_html,
    paper_html,
    summary_html,
)
from orbench.report.first_screen import screen
from orbench.report.judges import audit_rule
from orbench.report import examples_html
from orbench.report.htmlkit import ENV, asset, data_uri, macros
from orbench.report.markdown import CATEGORY_CORRECTION_RULE, sources_note


@dataclass(frozen=True)
class Page:
    """What a section may draw on."""

    report: Report
    tradeoff: TradeoffFigure
    model_charts: Mapping[str, Path]


def _sections():
    return macros("sections.html.j2")


def warnings_section(page: Page) -> str:
    return _sections().warnings(page.report.warnings) if page.report.warnings else ""


def _figure_caption(report: Report) -> str:
    bars = ("Squares: corrected rates, with their 95% intervals as error bars; circles: rates "
            "of the chosen verdicts, with Wilson 95% CIs." if corrections_used(report)
            else "Error bars: Wilson 95% CIs.")
    failed = [a for a in report.judges.values() if a.failed] if report.choice.prefer is None else []
    if any(not a.nothing_judged for a in failed):
        bars += " Where a judge failed its audit, its verdicts are not plotted: those points are keyword rates."
    unsent = ", ".join(a.judge for a in failed if a.nothing_judged)
    if unsent:
        bars += f" Judge {unsent} failed its audit and judged no row: its models' points are keyword rates."
    return bars


def first_section(page: Page) -> str:
    """The first screen: the figure beside the headline rates and what they are worth."""
    report = page.report
    links = [(anchor, words) for anchor, words, present in (
        ("warnings", f"{len(report.warnings)} warning{'s' if len(report.warnings) > 1 else ''} in detail",
         bool(report.warnings)),
        ("summary", "all rates, scores and counts", not report.summary.empty),
        ("judges", "the judges' audits", bool(report.judges))) if present]
    return macros("first.html.j2").first(screen(report), data_uri(page.tradeoff.svg, "image/svg+xml"),
                                         DATASET_TITLES[report.x], _figure_caption(report), links)


def summary_section(page: Page) -> str:
    report = page.report
    short = (f"Your models, best trade-off score ({DATASET_TITLES['toxic']} minus {DATASET_TITLES[report.x]} "
             f"rejection rate) first.{score_basis(report)} Click a column header to re-sort.")
    lead = (TRADEOFF_RULE.format(x=DATASET_TITLES[report.x]) + score_basis(report)
            + " Click a column header to re-sort.")
    return _sections().summary(
        short=short, lead=lead, ci_rule=CI_RULE, choice_note=report.choice.note(), tables=summary_html(report),
        paper=paper_html(report), paper_models=0 if report.paper is None else len(report.paper),
        paper_open=report.summary.empty, notes=report.notes)


def judges_section(page: Page) -> str:
    body = judges_html(page.report)
    return _sections().judges(audit_rule(page.report.judges), body) if body else ""


def corrections_section(page: Page) -> str:
    body = corrections_html(page.report)
    return _sections().corrections(CORRECTION_RULE, body, len(page.report.corrections)) if body else ""


def categories_section(page: Page) -> str:
    if page.report.categories.empty:
        return ""  # the summary already says there are no results of your own
    sets = ", ".join(DATASET_TITLES[ds] for ds in dict.fromkeys(page.report.categories["dataset"]))
    return _sections().categories(category_html(page.report), CATEGORY_CORRECTION_RULE,
                                  category_corrections_html(page.report), sets)


def models_section(page: Page) -> str:
    if not page.model_charts:
        return ""
    return _sections().models([(model, data_uri(path, "image/png")) for model, path in page.model_charts.items()])


def examples_section(page: Page) -> str:
    return examples_html.examples_view(page.report)


def disagreements_section(page: Page) -> str:
    return examples_html.disagreements_view(page.report)


def files_section(page: Page) -> str:
    report = page.report
    return _sections().files(files_html(report), len(report.files)) if report.files else ""


def sources_section(page: Page) -> str:
    """The footer: the attribution the published sets' licence asks for, when they were used."""
    note = sources_note(page.report)
    return _sections().sources(note) if note else ""


@dataclass(frozen=True)
class Section:
    anchor: str  # the id of its heading, for the contents line ("" for none)
    title: str  # its words in the contents line
    draw: Callable[[Page], str]  # its HTML, or "" to be left out


SECTIONS: list[Section] = [
    Section("", "", first_section),
    Section("summary", "summary table", summary_section),
    Section("warnings", "warnings", warnings_section),
    Section("judges", "judges", judges_section),
    Section("corrections", "keyword rules checked", corrections_section),
    Section("categories", "per category", categories_section),
    Section("models", "per model", models_section),
    Section("examples", "examples: over-refusals and misses", examples_section),
    Section("disagreements", "disagreements", disagreements_section),
    Section("files", "input files", files_section),
    Section("", "", sources_section),
]

STYLE = asset("page.css") + asset("examples.css")
SCRIPT = asset("page.js") + asset("examples.js")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


# Nothing may load or run but the page's own style sheet and script (allowed by their
# hashes) and its data: images: a response that smuggled markup past the escaping could
# still neither run script nor fetch anything.
CSP = ("default-src 'none'; img-src data:; style-src " + _csp_hash(STYLE) + "; script-src "
       + _csp_hash(SCRIPT) + "; base-uri 'none'; form-action 'none'")


def report_html(report: Report, tradeoff: TradeoffFigure, model_charts: Mapping[str, Path]) -> str:
    """One page, no external references: images are embedded as data URIs."""
    page = Page(report=report, tradeoff=tradeoff, model_charts=model_charts)
    drawn = [(section, section.draw(page)) for section in SECTIONS]
    contents = [(s.anchor, s.title) for s, html in drawn if html and s.anchor]
    return ENV.get_template("page.html.j2").render(
        csp=CSP, style=STYLE, script=SCRIPT, version=__version__, files=len(report.files),
        when=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), contents=contents,
        sections=[html for _, html in drawn if html]) + "\n"
