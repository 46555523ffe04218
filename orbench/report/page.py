"""The HTML page: one self-contained file, images embedded, tables sortable.

Every piece of text from the inputs (model names, categories, file names) goes through
html.escape: prompts and model names are data, never markup.
"""

from __future__ import annotations

import base64
import html
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from orbench import __version__
from orbench.report.build import Report
from orbench.report.common import CI_RULE, DATASET_TITLES, DATASETS, TRADEOFF_RULE, category_order, fmt
from orbench.report.figures import TradeoffFigure
from orbench.report.rates import summary_datasets

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;
max-width:1300px;padding:0 16px;color:#222}
h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.86em;margin:.6em 0}
th,td{border:1px solid #d4d4d4;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f1f1f1;cursor:pointer;user-select:none}
td:first-child,th:first-child{text-align:left}
tr.paper td{color:#8a8a8a;background:#fafafa}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}
img{max-width:100%;height:auto;border:1px solid #eee}
.note{color:#555}.warn{color:#a33}
figure{margin:1em 0}figcaption{color:#555;font-size:.9em}
.wide{overflow-x:auto}
.models{display:flex;flex-wrap:wrap;gap:12px}.models figure{flex:1 1 560px}
"""

_JS = """
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      var asc = !th.classList.contains('asc');
      table.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc ? 'asc' : 'desc');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(r){var c=r.cells[col]; return c.getAttribute('data-v') !== null ? c.getAttribute('data-v') : c.textContent;}
      rows.sort(function(a, b){
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var ex = x === '' || isNaN(nx) && !isNaN(ny), ey = y === '' || isNaN(ny) && !isNaN(nx);
        if (ex !== ey) return ex ? 1 : -1;
        var d = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? d : -d;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
"""


def _td(text: str, value=None) -> str:
    attr = ""
    if value is not None:
        if isinstance(value, float):
            v = "" if math.isnan(value) else f"{value:.6g}"
        else:
            v = str(value)
        attr = f' data-v="{html.escape(v)}"'
    return f"<td{attr}>{html.escape(str(text))}</td>"


def _data_uri(path: Path, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def summary_html(report: Report) -> str:
    summary = report.summary
    present = summary_datasets(summary)
    paper = report.paper
    show = list(present)
    if paper is not None:
        for ds in ("hard", "toxic"):
            if ds not in show:
                show.append(ds)
        show = [ds for ds in DATASETS if ds in show]
    head = ["model", "source"]
    for ds in show:
        t = DATASET_TITLES[ds]
        head += [f"{t} %", "95% CI", "scored", "unscored", "failed", "scored by"]
    head.append("trade-off score")
    out = ['<div class="wide"><table class="sortable"><thead><tr>'
           + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    body: list[tuple[float, str]] = []  # (trade-off score, row), to interleave with the paper
    for _, r in summary.iterrows():
        cells = [_td(r["model"]), _td("yours")]
        for ds in show:
            if ds not in present:
                cells += [_td("–", math.nan)] + [_td("")] * 5
                continue
            rate = float(r[f"{ds}_rejection_pct"])
            ci = ("–" if math.isnan(rate)
                  else f"{r[f'{ds}_ci_low_pct']:.1f}–{r[f'{ds}_ci_high_pct']:.1f}")
            by = r[f"{ds}_scored_by"]
            cells += [_td(fmt(rate), rate), _td(ci, float(r[f"{ds}_ci_low_pct"])),
                      _td(r[f"{ds}_scored"], r[f"{ds}_scored"]),
                      _td(r[f"{ds}_unscored"], r[f"{ds}_unscored"]),
                      _td(r[f"{ds}_failed"], r[f"{ds}_failed"]),
                      _td(by if isinstance(by, str) else "–")]
        score = float(r["tradeoff_score"])
        cells.append(_td(fmt(score), score))
        body.append((score, "<tr>" + "".join(cells) + "</tr>"))
    if paper is not None:
        for _, r in paper.iterrows():
            vals = {"hard": float(r["hard_1k_rejection_pct"]),
                    "toxic": float(r["toxic_rejection_pct"])}
            cells = [_td(r["model"] + ("*" if r["ensemble_judge"] else "")), _td("paper")]
            for ds in show:
                v = vals.get(ds, math.nan)
                cells += [_td(fmt(v), v), _td("–", math.nan), _td(""), _td(""), _td(""),
                          _td("published")]
            score = (vals["toxic"] - vals[report.x]) if report.x in vals else math.nan
            cells.append(_td(fmt(score), score))
            body.append((score, '<tr class="paper">' + "".join(cells) + "</tr>"))
    # Same order as the summary: highest score first, rows without one last.
    body.sort(key=lambda sr: (math.isnan(sr[0]), -sr[0] if not math.isnan(sr[0]) else 0.0))
    out += [row for _, row in body]
    out.append("</tbody></table></div>")
    return "\n".join(out)


def category_html(report: Report) -> str:
    cats = report.categories
    if cats.empty:
        return "<p>No results of your own.</p>"
    parts = []
    for ds in DATASETS:
        sub = cats[cats["dataset"] == ds]
        if sub.empty:
            continue
        names = category_order(sub["category"])
        parts.append(f"<h3>{html.escape(DATASET_TITLES[ds])}</h3>")
        parts.append('<table class="sortable"><thead><tr><th>model</th>'
                     + "".join(f"<th>{html.escape(c)}</th>" for c in names)
                     + "</tr></thead><tbody>")
        for model in dict.fromkeys(sub["model"]):
            m = sub[sub["model"] == model].set_index("category")
            cells = [_td(model)]
            for c in names:
                if c in m.index and m.at[c, "scored"] > 0:
                    rate = float(m.at[c, "rejection_pct"])
                    cells.append(_td(f"{rate:.1f} ({m.at[c, 'refused']}/{m.at[c, 'scored']})", rate))
                else:
                    cells.append(_td("–", math.nan))
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
    return "\n".join(parts)


def report_html(report: Report, tradeoff: TradeoffFigure, model_charts: Mapping[str, Path]) -> str:
    """One page, no external references: images are embedded as data URIs."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    xname = DATASET_TITLES[report.x]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>OR-Bench report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>OR-Bench report</h1>",
        f'<p class="note">Made by orbench {html.escape(__version__)} on {when} from '
        f"{len(report.files)} result file(s). Every number is computed from those files.</p>",
        "<h2>Summary</h2>",
        f"<p>{html.escape(TRADEOFF_RULE.format(x=xname))} Click a column header to re-sort.</p>",
        f"<p>{html.escape(CI_RULE)} Rejection rate = refused / scored. <b>unscored</b>: rows "
        "with no verdict (an empty or filtered response, or a judge verdict that could not be "
        "parsed); <b>failed</b>: rows whose request or judge call failed. Neither is in the "
        "denominator. <b>scored by</b>: keyword rules (stage 4) or the named LLM judge "
        "(stage 5).</p>",
    ]
    if report.paper is not None:
        parts.append('<p class="note">Grey rows: the paper\'s published numbers, for '
                     "comparison (* = a model that was also a judge in the paper's "
                     "moderation ensemble).</p>")
    parts.append(summary_html(report))
    if report.notes:
        parts.append("<ul>" + "".join(f'<li class="warn">{html.escape(n)}</li>'
                                      for n in report.notes) + "</ul>")
    parts += [
        "<h2>Over-refusal vs. safety</h2>",
        f'<figure><img alt="trade-off figure" src="{_data_uri(tradeoff.svg, "image/svg+xml")}">',
        f"<figcaption>x: rejection rate on {html.escape(xname)}; y: rejection rate on "
        "OR-Bench-Toxic. Top-left is best. Error bars: Wilson 95% CIs.</figcaption></figure>",
        "<h2>Rejection rate per category</h2>",
        "<p>Cell: rejection % (refused / scored).</p>",
        category_html(report),
    ]
    if model_charts:
        parts.append("<h2>Per model</h2><div class=\"models\">")
        for model, path in model_charts.items():
            parts.append(f'<figure><img alt="{html.escape(model)} per category" '
                         f'src="{_data_uri(path, "image/png")}"></figure>')
        parts.append("</div>")
    if report.files:
        parts.append("<h2>Input files</h2>")
        parts.append('<table class="sortable"><thead><tr><th>file</th><th>model</th>'
                     "<th>dataset</th><th>stage</th><th>kind</th><th>judge</th>"
                     "<th>complete</th></tr></thead><tbody>")
        for f in report.files:
            done = "?" if f.complete is None else ("yes" if f.complete else "NO")
            parts.append("<tr>" + "".join(_td(v) for v in (
                f.path.name, f.model, f.dataset, f.stage, f.kind, f.judge or "–", done)) + "</tr>")
        parts.append("</tbody></table>")
    parts += [f"<script>{_JS}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"

