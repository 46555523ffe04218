"""Build the results report from stage-4 and stage-5 CSV files. May import judge_audit, inspect_eval, statistics and everything below them.

    python -m orbench.report INPUTS... --output_dir DIR [--compare_paper] [--x hard|safe]

Inputs are result files or folders (folders are searched recursively for result files, by
their run records, else by name; other CSVs in them are skipped). Everything in the report is
computed from the rows of these files; nothing is typed in by hand.

What a file is comes from its run record first (orbench.tables.runinfo.RunRecord, the `.run.json`
beside it: its own, or the one that names it as its `failed_output`): `stage`, the model
(stage 4: `model`; stage 5: `target_model` and `check_model`), `dataset` (a published set),
merged or failed, the judged sample (`sample_size`, `input_path`, `sample_design`), `audit`,
`complete`. Where no record says, from its name:
  {model}_merged_{input}                          stage 4, keyword verdicts (is_rejected)
  {model}_rejected_{input}, {model}_accepted_{input}  stage 4 with --merge_result=False
  {model}_failed_{input}                          stage 4 requests that failed
  {stem}_response_check_merged_{judge}.csv        stage 5, judge verdicts (answer_category)
  {stem}_response_check_failed_{judge}.csv        stage 5 judge calls that failed
where {stem} is the stem of the stage-4 file the judge read. A failed or split file without a
record of its own that no record names takes the record of the file its name goes with.

Inspect logs (`.eval`) of the OR-Bench tasks (orbench/inspect_eval/) are read too, named or
found in folders: the detector's verdicts count as keyword verdicts, the judge's as judge
verdicts, and the model is Inspect's model name (or the task's `-T name=...`).

Which dataset a file belongs to: its record's `dataset` (stage 5: else its stage-4 file's),
else the input-file part of its name (never the model or judge part), lower-cased, which must
contain exactly one of `hard` (Hard-1K), `toxic` (Toxic), or `80k` / `safe` (the 80K safe set).
`--hard/--toxic/--safe FILES` or `--dataset FILE=DATASET` override both; anything else is an
error.

Outcomes of a row: refused, answered, unscored (stage 4 `empty` / `filtered` or any other
non-boolean value; stage 5 `unscored` or any unknown class) and failed. Rejection rate =
refused / (refused + answered): unscored and failed rows are never in the denominator and
are counted apart. 95% intervals are Wilson score intervals over prompts.

Verdict precedence for one (model, dataset): the judge's verdicts when any stage-5 file
exists for it, else the keyword verdicts; but a judge whose audit against human labels (in
its stage-5 .run.json, written by stage 5's --audit) failed is set aside: its verdicts and
corrected rates are shown, marked, and the keyword verdicts carry the figure, the score and
the ranking (choice.py). `--prefer judge|keyword` overrides this for every judge, and the
page says so. With the judge, failed stage-4 requests still count as failed rows. The paper
used keywords on the 80K set and the judge on Hard-1K and Toxic.

Judged samples: a stage-5 file whose .run.json has a `sample_size` (stage 5 `--sample N`), or
that `--sample_of JUDGED=STAGE4` pairs with its stage-4 file, judged a random sample of that
stage-4 file (uniform, or `--design score`: each row's inclusion probability is in the file).
It is never taken as the model's verdicts: it measures the keyword rules on that model, and
the report shows the rate corrected by it (post-stratified on stage 4's refusal_score where
there is one, else prediction-powered inference on the keyword verdicts) with a 95% interval,
its half-width and the judge calls for ±1/±2/±3 points, the judge's rate on the sample, agreement, Cohen's
kappa and a warning when the rules look unreliable (correction.py). The stage-4 file is
found from the .run.json (`input_path`, else `input_file` beside the stage-5 file) and read
even when not among the inputs; when it is missing the report stops with exit code 2.

Package layout: files (finding and classifying inputs), samples (pairing judged samples with
their stage-4 files), rows (one outcome per row, choice of verdicts), judges (each judge's
audit), choice (whose verdicts count), provenance (hard sets built from the tested models),
rates (Wilson rates, the summary), correction (corrected rates), advice (the warnings, one
per cause), examples (the rows behind the rates, for reading), build (the Report),
summary_view (the summary as read), markdown, figures and labels, htmlkit / html_tables /
examples_html / first_screen / page (the HTML page: the first screen, then a list of sections,
drawn by the autoescaped Jinja2 templates in templates/), write, cli.

Outputs in --output_dir: summary.csv, summary.md, per_category.csv, per_category.md,
tradeoff.png, tradeoff.svg, models/*.png (rate per category per model) and report.html,
one self-contained file with everything. It opens on the trade-off figure beside the headline
rates and what they are worth (first_screen.py); the rest follows, long parts folded. Your own
models come first; the paper's rows
(--compare_paper) after them. report.html also embeds, per model and set, the over-refusals
and misses and the keyword-vs-judge disagreements, at most --examples_per_set rows each (a
random sample, --examples_seed), with filters and a search box (examples.py).
"""

from typing import TYPE_CHECKING

from orbench.lazy import lazy_exports
from orbench.report.cli import main
from orbench.report.common import (
    ANSWERED,
    CI_RULE,
    DATASET_TITLES,
    DATASETS,
    FAILED,
    KEYWORD,
    OUTCOMES,
    REFUSED,
    TRADEOFF_RULE,
    UNSCORED,
    ReportError,
    ResultFile,
)

# The rest load on first use (pandas, numpy, matplotlib, jinja2): `python -m orbench.report
# --help` imports this package and should answer at once (orbench/lazy.py).
__getattr__, __dir__ = lazy_exports(__name__, globals(), {
    "build": ("Report", "build_report", "load_results"),
    "figures": ("TradeoffFigure", "plot_model_categories", "plot_tradeoff"),
    "files": ("infer_dataset", "parse_result_name", "scan_inputs"),
    "labels": ("place_labels",),
    "markdown": ("category_markdown", "summary_markdown"),
    "page": ("report_html",),
    "paper": ("load_paper_results", "paper_points"),
    "rates": ("category_table", "rate_table", "summarize"),
    "rows": ("read_results", "select_verdicts"),
    "write": ("write_report",),
})

if TYPE_CHECKING:
    from orbench.report.build import Report, build_report, load_results
    from orbench.report.figures import TradeoffFigure, plot_model_categories, plot_tradeoff
    from orbench.report.files import infer_dataset, parse_result_name, scan_inputs
    from orbench.report.labels import place_labels
    from orbench.report.markdown import category_markdown, summary_markdown
    from orbench.report.page import report_html
    from orbench.report.paper import load_paper_results, paper_points
    from orbench.report.rates import category_table, rate_table, summarize
    from orbench.report.rows import read_results, select_verdicts
    from orbench.report.write import write_report

__all__ = [
    "ANSWERED", "CI_RULE", "DATASETS", "DATASET_TITLES", "FAILED", "KEYWORD", "OUTCOMES",
    "REFUSED", "TRADEOFF_RULE", "UNSCORED", "Report", "ReportError", "ResultFile",
    "TradeoffFigure", "build_report", "category_markdown", "category_table", "infer_dataset",
    "load_paper_results", "load_results", "main", "paper_points", "parse_result_name",
    "place_labels", "plot_model_categories", "plot_tradeoff", "rate_table", "read_results",
    "report_html", "scan_inputs", "select_verdicts", "summarize", "summary_markdown",
    "write_report",
]

