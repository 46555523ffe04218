"""Writing the report's files: tables, figures and the HTML page."""

from __future__ import annotations

from pathlib import Path

from orbench.report.build import Report
from orbench.report.figures import plot_model_categories, plot_tradeoff, safe_filename
from orbench.report.markdown import category_markdown, summary_markdown
from orbench.report.page import report_html



def write_report(report: Report, output_dir: str | Path) -> dict[str, Path]:
    """Write every table, figure and the HTML page; return what was written, by name."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    written["summary_csv"] = out / "summary.csv"
    report.summary.to_csv(written["summary_csv"], index=False, float_format="%.4f")
    written["summary_md"] = out / "summary.md"
    written["summary_md"].write_text(summary_markdown(report), encoding="utf-8")
    written["categories_csv"] = out / "per_category.csv"
    report.categories.to_csv(written["categories_csv"], index=False, float_format="%.4f")
    written["categories_md"] = out / "per_category.md"
    written["categories_md"].write_text(category_markdown(report), encoding="utf-8")
    fig = plot_tradeoff(report.summary, out / "tradeoff", x=report.x, paper=report.paper,
                        use_corrected=report.use_corrected)
    written["tradeoff_png"], written["tradeoff_svg"] = fig.png, fig.svg
    charts: dict[str, Path] = {}
    used: set[str] = set()
    for model in report.summary["model"]:
        name = safe_filename(str(model))
        while name in used:  # two models that clean up to the same file name
            name += "_"
        used.add(name)
        charts[str(model)] = plot_model_categories(report.categories, model,
                                                   out / "models" / f"{name}.png")
        written[f"model:{model}"] = charts[str(model)]
    written["html"] = out / "report.html"
    written["html"].write_text(report_html(report, fig, charts), encoding="utf-8")
    return written

