"""Building blocks of the HTML page: its style sheet and script, escaped cells, tables, images.

Every piece of text from the inputs (model names, categories, file names) goes through
html.escape: prompts and model names are data, never markup.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Sequence

CSS = """
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
td.warn{color:#a33;font-weight:600}tr.unreliable td{background:#fff4f2}
td.wrap{white-space:normal;text-align:left;min-width:11em;max-width:30em}
td.name{white-space:normal;text-align:left;overflow-wrap:anywhere;min-width:6em}
th{white-space:normal}td.path{white-space:normal;text-align:left;overflow-wrap:anywhere;min-width:12em}
ul.advice li{margin:.35em 0}details.details{margin:.6em 0}details.details>summary{cursor:pointer;color:#555}
figure{margin:1em 0}figcaption{color:#555;font-size:.9em}
.wide{overflow-x:auto}
details.paper{margin:.8em 0}details.paper>summary{cursor:pointer;color:#555;font-weight:600}
.models{display:flex;flex-wrap:wrap;gap:12px}.models figure{flex:1 1 560px}
"""

JS = """
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


def td(text: str, value=None, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    if value is not None:
        if isinstance(value, float):
            v = "" if math.isnan(value) else f"{value:.6g}"
        else:
            v = str(value)
        attr += f' data-v="{html.escape(v)}"'
    return f"<td{attr}>{html.escape(str(text))}</td>"


def data_uri(path: Path, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")



def th_row(head: Sequence[str]) -> str:
    return "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead>"


def table(head: Sequence[str], rows: Sequence[str], wide: bool = False) -> str:
    """A sortable table from a header and ready-made <tr> rows."""
    body = f'<table class="sortable">{th_row(head)}<tbody>' + "\n".join(rows) + "</tbody></table>"
    return f'<div class="wide">{body}</div>' if wide else body


def paragraph(text: str, cls: str | None = None) -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<p{attr}>{html.escape(text)}</p>"
