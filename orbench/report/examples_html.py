"""The examples and disagreements views of the HTML page (rows from examples.py).

Prompts, responses, categories and verdicts are untrusted text: every piece goes through
html.escape(quote=True), in cells and in attributes alike, and none is ever put into the
script. The script only reads the rows' data-* attributes and text to filter them.
"""

from __future__ import annotations

import html
import re
from typing import Sequence

from orbench.report.build import Report
from orbench.report.common import DATASET_TITLES, category_order
from orbench.report.examples import DISAGREEMENTS, MISSES, Example, ExampleSet, describe_scoring
from orbench.report.htmlkit import paragraph, th_row

PREVIEW_CHARS = 140
SHORT_TITLES = {"safe": "80K", "hard": "Hard-1K", "toxic": "Toxic"}

CSS = """
.filters{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center;margin:.6em 0;
padding:8px 10px;background:#f6f6f6;border:1px solid #e2e2e2;position:sticky;top:0;z-index:1}
.filters input{width:18em}.filters .count{font-weight:600;margin-left:auto}
table.rows{width:100%}
table.rows th,table.rows td{white-space:normal;text-align:left;vertical-align:top}
table.rows td.set{white-space:nowrap}
table.rows td.txt{min-width:14em;max-width:30em;overflow-wrap:anywhere}
table.rows td.resp{min-width:18em;max-width:40em;overflow-wrap:anywhere}
table.rows summary{cursor:pointer;color:#333}
table.rows details[open]>summary .pv{display:none}
table.rows details[open]>summary::after{content:"fold";color:#777}
table.rows .full{white-space:pre-wrap;margin:.4em 0 0;max-height:26em;overflow:auto;
background:#fafafa;border:1px solid #eee;padding:4px 6px}
td.refused{color:#a33}td.answered{color:#1f6f2a}.dim{color:#777;font-size:.9em}
ul.caps{font-size:.9em;color:#444}
"""

# Filters every .filters bar's table by its selects and search box; rows are only hidden.
JS = """
document.querySelectorAll('.filters').forEach(function(bar){
  var table = document.getElementById(bar.getAttribute('data-table'));
  if (!table) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var texts = rows.map(function(r){ return r.textContent.toLowerCase(); });
  var count = bar.querySelector('.count');
  var controls = Array.prototype.slice.call(bar.querySelectorAll('select, input'));
  function apply(){
    var want = {};
    controls.forEach(function(c){ want[c.getAttribute('data-key')] = c.value; });
    var q = (want.q || '').trim().toLowerCase(), shown = 0;
    rows.forEach(function(r, i){
      var ok = (!want.model || r.getAttribute('data-model') === want.model)
        && (!want.set || r.getAttribute('data-set') === want.set)
        && (!want.cat || r.getAttribute('data-cat') === want.cat)
        && (!q || texts[i].indexOf(q) !== -1);
      r.hidden = !ok;
      if (ok) shown++;
    });
    count.textContent = 'Showing ' + shown.toLocaleString('en') + ' of '
      + rows.length.toLocaleString('en') + ' rows';
  }
  controls.forEach(function(c){
    c.addEventListener('input', apply);
    c.addEventListener('change', apply);
  });
  apply();
});
"""

HEAD = ["model", "set", "category", "prompt", "response", "keyword", "refusal score", "judge",
        "the rate counts it as"]

KIND_TITLES = {MISSES: "misses (toxic prompts answered)",
               DISAGREEMENTS: "keyword and judge disagree"}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _kind_title(kind: str) -> str:
    return KIND_TITLES.get(kind, "over-refusals (safe prompts refused)")


def _preview(text: str) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    if not flat:
        return "(empty response)"
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS].rstrip() + "…"


def _outcome_td(outcome: str, extra: str = "") -> str:
    cls = f' class="{_e(outcome)}"' if outcome in ("refused", "answered") else ""
    text = _e(outcome or "–") + (f' <span class="dim">{_e(extra)}</span>' if extra else "")
    return f"<td{cls}>{text}</td>"


def _row(ex: Example) -> str:
    title = SHORT_TITLES[ex.dataset]
    judge = (_e(ex.judge_class or ex.judge) + f' <span class="dim">({_e(ex.judge_name)})</span>'
             if ex.judge else "–")
    judge_cls = f' class="{ex.judge}"' if ex.judge in ("refused", "answered") else ""
    response = (f'<details><summary><span class="pv">{_e(_preview(ex.response))}</span></summary>'
                f'<div class="full">{_e(ex.response)}</div></details>')
    cells = [
        f"<td>{_e(ex.model)}</td>", f'<td class="set">{_e(title)}</td>', f"<td>{_e(ex.category)}</td>",
        f'<td class="txt">{_e(ex.prompt)}</td>', f'<td class="resp">{response}</td>',
        _outcome_td(ex.keyword), f"<td>{_e(ex.refusal_score or '–')}</td>",
        f"<td{judge_cls}>{judge}</td>",
        _outcome_td(ex.verdict, f"({describe_scoring(ex.scored_by)})"),
    ]
    return (f'<tr data-model="{_e(ex.model)}" data-set="{_e(ex.dataset)}" '
            f'data-cat="{_e(ex.category)}">' + "".join(cells) + "</tr>")


def _cap_line(s: ExampleSet, cap: int, seed: int) -> str:
    where = f"{s.model} · {DATASET_TITLES[s.dataset]} · {_kind_title(s.kind)}"
    if s.total == 0:
        return f"{where}: none"
    if len(s.rows) < s.total:
        return (f"{where}: showing {len(s.rows):,} of {s.total:,} rows, chosen at random "
                f"with seed {seed}")
    return f"{where}: all {s.total:,} row{'s' if s.total != 1 else ''}"


def _select(view: str, key: str, label: str, options: Sequence[tuple[str, str]]) -> str:
    opts = '<option value="">all</option>' + "".join(
        f'<option value="{_e(v)}">{_e(t)}</option>' for v, t in options)
    return (f'<label>{_e(label)} <select id="{view}-{label}" data-key="{key}">{opts}'
            "</select></label>")


def _view(view: str, sets: Sequence[ExampleSet], cap: int, seed: int) -> str:
    rows = [ex for s in sets for ex in s.rows]
    caps = "".join(f"<li>{_e(_cap_line(s, cap, seed))}</li>" for s in sets)
    parts = [f'<ul class="caps">{caps}</ul>']
    if not rows:
        parts.append("<p>No rows to show.</p>")
        return "\n".join(parts)
    models = list(dict.fromkeys(ex.model for ex in rows))
    datasets = list(dict.fromkeys(ex.dataset for ex in rows))
    cats = category_order({ex.category for ex in rows})
    total = len(rows)
    parts += [
        f'<div class="filters" data-table="{view}-table">',
        _select(view, "model", "model", [(m, m) for m in models]),
        _select(view, "set", "set", [(d, SHORT_TITLES[d]) for d in datasets]),
        _select(view, "cat", "category", [(c, c) for c in cats]),
        f'<label>search <input id="{view}-search" type="search" data-key="q" '
        'placeholder="words in the prompt or response" autocomplete="off"></label>',
        f'<span class="count" id="{view}-count">Showing {total:,} of {total:,} rows</span>',
        "</div>",
        f'<div class="wide"><table class="sortable rows" id="{view}-table">{th_row(HEAD)}<tbody>',
        "\n".join(_row(ex) for ex in rows), "</tbody></table></div>",
    ]
    return "\n".join(parts)


def nav(report: Report) -> str:
    """Links down to the views, under the page's title: the views sit below the figures."""
    ex = report.examples
    if ex is None or ex.cap <= 0 or not ex.examples:
        return ""
    return ('<p class="note">The rows behind the rates: <a href="#examples">over-refusals and '
            'misses</a> · <a href="#disagreements">keyword vs. judge disagreements</a></p>')


def _cap_rule(cap: int, seed: int) -> str:
    return (f"At most {cap:,} rows per model and set are embedded; where there are more, "
            f"they are a random sample (seed {seed}; change it with --examples_seed, the cap "
            "with --examples_per_set). Responses are folded: click one to read it all.")


def examples_view(report: Report) -> str:
    ex = report.examples
    if ex is None or ex.cap <= 0 or not ex.examples:
        return ""
    # A <section> of its own keeps the sticky filter bar inside its view.
    return "\n".join([
        '<section class="view">', '<h2 id="examples">Examples: over-refusals and misses</h2>',
        paragraph("Over-refusals: prompts of the safe sets (80K, Hard-1K) that the model "
                  "refused. Misses: prompts of the Toxic set that it answered. Both by the "
                  "verdicts the rates above use; the keyword verdict, stage 4's refusal score "
                  "and the judge's verdict are shown where they exist. " + _cap_rule(ex.cap, ex.seed)),
        _view("examples", ex.examples, ex.cap, ex.seed), "</section>",
    ])


def disagreements_view(report: Report) -> str:
    ex = report.examples
    if ex is None or ex.cap <= 0 or not ex.examples:
        return ""
    head = '<h2 id="disagreements">Disagreements: keyword rules vs. judge</h2>'
    if not ex.compared:
        return head + "\n" + paragraph(
            "No row has both a keyword verdict and a judge's verdict: a stage-5 file of the "
            "same rows as a stage-4 file (a full run or a judged sample) is needed.", "note")
    failed = sorted(j for j, a in report.judges.items() if a.failed)
    doubt = (f" Judge {', '.join(failed)} failed its audit against human labels: where it disagrees "
             "with the keyword rules here, read the response before trusting the judge." if failed else "")
    return "\n".join([
        '<section class="view">', head,
        paragraph("Rows where stage 4's keyword rules and the stage-5 judge both gave a "
                  "verdict, and they differ, on any set. Rows are paired by prompt and "
                  "response. " + _cap_rule(ex.cap, ex.seed) + doubt),
        _view("disagreements", ex.disagreements, ex.cap, ex.seed), "</section>",
    ])
