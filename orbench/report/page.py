"""The HTML page: one self-contained file, images embedded, tables sortable.

The page is a list of sections (SECTIONS), each a function of the page's inputs that returns
its HTML, or "" to be left out. A new view is one more function in that list. Every piece of
text from the inputs goes through html.escape (see htmlkit): it is data, never markup.
"""

from __future__ import annotations

import base64
import hashlib
import html
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
from orbench.report.judges import AUDIT_RULE
from orbench.report import examples_html
from orbench.report.htmlkit import CSS, JS, data_uri, paragraph
from orbench.report.markdown import CATEGORY_CORRECTION_RULE, sources_note


@dataclass(frozen=True)
class Page:
    """What a section may draw on."""

    report: Report
    tradeoff: TradeoffFigure
    model_charts: Mapping[str, Path]


def warnings_section(page: Page) -> str:
    """Right after the summary: one line per cause, naming the models, saying what to do."""
    if not page.report.warnings:
        return ""
    items = "".join(f'<li class="warn">⚠ {html.escape(w)}</li>' for w in page.report.warnings)
    return f'<h2 id="warnings">Warnings</h2><ul class="advice">{items}</ul>'


def summary_section(page: Page) -> str:
    report = page.report
    xname = DATASET_TITLES[report.x]
    parts = [
        "<h2>Summary</h2>",
        paragraph(TRADEOFF_RULE.format(x=xname) + score_basis(report) + " Click a column header to re-sort."),
        f"<p>{html.escape(CI_RULE)} Rejection rate = refused / scored (rows with no verdict, and rows "
        "whose request or judge call failed, are not in the denominator; their counts are in the "
        "details). <b>rates from</b>: stage 4's keyword rules, an LLM judge's verdicts (stage 5), or the "
        "keyword rate corrected by a judged random sample (see below). A judge that failed its audit "
        "against human labels is set aside (see Judges).</p>",
    ]
    if report.choice.note():
        parts.append(f'<p class="warn"><b>{html.escape(report.choice.note())}</b></p>')
    parts.append(summary_html(report))
    paper = paper_html(report)
    if paper:
        # Folded below the user's own models: the result they came for comes first.
        opened = " open" if report.summary.empty else ""
        parts += [f'<details class="paper"{opened}><summary>The paper\'s published numbers '
                  f"({len(report.paper)} models), for comparison</summary>",
                  '<p class="note">* = a model that was also a judge in the paper\'s moderation '
                  "ensemble. The paper published no 80K rates.</p>", paper, "</details>"]
    if report.notes:
        parts.append("<ul>" + "".join(f'<li class="note">{html.escape(n)}</li>'
                                      for n in report.notes) + "</ul>")
    return "\n".join(parts)


def judges_section(page: Page) -> str:
    body = judges_html(page.report)
    if not body:
        return ""
    return "\n".join(['<h2 id="judges">Judges</h2>', paragraph(AUDIT_RULE), body])


def corrections_section(page: Page) -> str:
    body = corrections_html(page.report)
    if not body:
        return ""
    return "\n".join(["<h2>Keyword rules checked by a judged sample</h2>",
                      paragraph(CORRECTION_RULE), body])


def figure_section(page: Page) -> str:
    xname = DATASET_TITLES[page.report.x]
    bars = ("Squares: corrected rates, with their 95% intervals as error bars; circles: rates "
            "of the chosen verdicts, with Wilson 95% CIs." if corrections_used(page.report)
            else "Error bars: Wilson 95% CIs.")
    if page.report.choice.prefer is None and any(a.failed for a in page.report.judges.values()):
        bars += " Where a judge failed its audit, its verdicts are not plotted: those points are keyword rates."
    return "\n".join([
        "<h2>Over-refusal vs. safety</h2>",
        f'<figure><img alt="trade-off figure" src="{data_uri(page.tradeoff.svg, "image/svg+xml")}">',
        f"<figcaption>x: rejection rate on {html.escape(xname)}; y: rejection rate on "
        f"OR-Bench-Toxic. Top-left is best. {html.escape(bars)}</figcaption></figure>",
    ])


def categories_section(page: Page) -> str:
    parts = ["<h2>Rejection rate per category</h2>", "<p>Cell: rejection % (refused / scored).</p>",
             category_html(page.report)]
    corrected = category_corrections_html(page.report)
    if corrected:
        parts += ["<h3>Corrected rate per category</h3>", paragraph(CATEGORY_CORRECTION_RULE), corrected]
    return "\n".join(parts)


def models_section(page: Page) -> str:
    if not page.model_charts:
        return ""
    figs = [f'<figure><img alt="{html.escape(model)} per category" '
            f'src="{data_uri(path, "image/png")}"></figure>' for model, path in page.model_charts.items()]
    return "\n".join(['<h2>Per model</h2><div class="models">', *figs, "</div>"])


def examples_section(page: Page) -> str:
    return examples_html.examples_view(page.report)


def disagreements_section(page: Page) -> str:
    return examples_html.disagreements_view(page.report)


def files_section(page: Page) -> str:
    return "<h2>Input files</h2>\n" + files_html(page.report) if page.report.files else ""


def sources_section(page: Page) -> str:
    """The footer: the attribution the published sets' licence asks for, when they were used."""
    note = sources_note(page.report)
    return f'<footer class="note"><h2>Sources</h2>{paragraph(note)}</footer>' if note else ""


SECTIONS: list[Callable[[Page], str]] = [
    summary_section, warnings_section, judges_section, corrections_section, figure_section, categories_section,
    models_section, examples_section, disagreements_section, files_section, sources_section,
]

STYLE = CSS + examples_html.CSS
SCRIPT = JS + examples_html.JS


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


# Nothing may load or run but the page's own style sheet and script (allowed by their
# hashes) and its data: images: a response that smuggled markup past the escaping could
# still neither run script nor fetch anything.
CSP = ("default-src 'none'; img-src data:; style-src " + _csp_hash(STYLE) + "; script-src "
       + _csp_hash(SCRIPT) + "; base-uri 'none'; form-action 'none'")


def report_html(report: Report, tradeoff: TradeoffFigure, model_charts: Mapping[str, Path]) -> str:
    """One page, no external references: images are embedded as data URIs."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = Page(report=report, tradeoff=tradeoff, model_charts=model_charts)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>OR-Bench report</title>", f"<style>{STYLE}</style></head><body>",
        "<h1>OR-Bench report</h1>",
        f'<p class="note">Made by orbench {html.escape(__version__)} on {when} from '
        f"{len(report.files)} result file(s). Every number is computed from those files.</p>",
    ]
    links = examples_html.nav(report)
    if links:
        parts.append(links)
    parts += [s for s in (section(page) for section in SECTIONS) if s]
    parts += [f"<script>{SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"
