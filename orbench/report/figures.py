"""The figures: the trade-off scatter and one category chart per model."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from orbench.tables.published import is_result_label  # noqa: E402
from orbench.report.common import DATASET_TITLES, DATASETS, category_order  # noqa: E402
from orbench.report.labels import overlap_area, place_labels  # noqa: E402
from orbench.report.paper import paper_points  # noqa: E402
from orbench.report.rates import headline  # noqa: E402
from orbench.statistics.stats import SpearmanResult, quadratic_fit, spearman  # noqa: E402

MIN_POINTS_FOR_FIT = 4
ZERO_BAR = 1.5  # height (points of %) of the stub that shows a 0% bar in the category charts
PUBLISHED_RING = 330  # marker area (points²) of the ring around a point measured on the published sets


def _pvalue_text(p: float) -> str:
    if math.isnan(p):
        return "n/a"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _limits(values: Iterable[float], floor_to: float = 5.0) -> tuple[float, float]:
    vals = [v for v in values if not math.isnan(v)]
    low = min(vals) if vals else 0.0
    low = max(-3.0, math.floor((low - 4.0) / floor_to) * floor_to)
    return low, 104.0


@dataclass(frozen=True)
class TradeoffFigure:
    png: Path
    svg: Path
    points: int  # user points drawn
    paper_points: int
    spearman: SpearmanResult | None  # over the user's points
    paper_spearman: SpearmanResult | None
    label_overlaps: int = 0  # pairs of point labels whose boxes overlap, as drawn


@dataclass
class _PointLabels:
    """The labels to place beside the points, in drawing order."""

    anchors: list[tuple[float, float]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    styles: list[dict] = field(default_factory=list)
    leader_colors: list[str] = field(default_factory=list)

    def add(self, anchor: tuple[float, float], text: str, style: dict, leader_color: str) -> None:
        self.anchors.append(anchor)
        self.texts.append(text)
        self.styles.append(style)
        self.leader_colors.append(leader_color)


@dataclass(frozen=True)
class _UserPoints:
    """The user's models that have a rate on both axes, with the rates' intervals."""

    models: pd.DataFrame
    x: np.ndarray
    x_low: np.ndarray
    x_high: np.ndarray
    y: np.ndarray
    y_low: np.ndarray
    y_high: np.ndarray
    corrected: np.ndarray  # per point: a corrected rate on either axis (square marker)


def plot_tradeoff(summary: pd.DataFrame, out_stem: Path, x: str = "hard",
                  paper: pd.DataFrame | None = None, title: str | None = None,
                  use_corrected: bool = True) -> TradeoffFigure:
    """The trade-off figure: x = rejection rate on the x set, y = on the toxic set.

    Writes out_stem.png and out_stem.svg. The user's models are coloured points: on each
    axis the corrected rate (keyword + judged sample) with its 95% interval where there is
    one (square markers), else the rate of the chosen verdicts with its Wilson 95% CI
    (circles); use_corrected=False plots the chosen verdicts' rates only. A model measured on
    the published sets (orbench.tables.published's label) is ringed. The paper's are grey, when
    given and x is "hard".
    """
    mine = _user_points(summary, x, use_corrected)
    pp = paper_points(paper) if (paper is not None and x == "hard") else None
    fig, ax = _tradeoff_axes()
    labels = _PointLabels()
    legend_handles: list = []
    my_rho = paper_rho = None
    if mine is not None:
        my_rho = _draw_user_points(ax, mine, labels, legend_handles)
    if pp is not None:
        paper_rho = _draw_paper_points(ax, pp, mine is not None, labels, legend_handles)
    y_values = [a[1] for a in labels.anchors] + (list(mine.y_low) if mine is not None else [])
    _decorate_axes(ax, x, title, y_values)
    overlaps = _place_point_labels(fig, ax, legend_handles, labels)
    png, svg = _save_tradeoff(fig, Path(out_stem))
    return TradeoffFigure(png=png, svg=svg, points=0 if mine is None else len(mine.models),
                          paper_points=0 if pp is None else len(pp),
                          spearman=my_rho, paper_spearman=paper_rho,
                          label_overlaps=overlaps // 2)


def _user_points(summary: pd.DataFrame, x: str, use_corrected: bool) -> _UserPoints | None:
    """The models with a headline rate on both axes; None when there is none."""
    if not len(summary):
        return None
    xr, xl, xh, xc = headline(summary, x, use_corrected)
    yr, yl, yh, yc = headline(summary, "toxic", use_corrected)
    keep = (xr.notna() & yr.notna()).to_numpy()
    if not keep.any():
        return None
    xr, xl, xh, yr, yl, yh = (s[keep].to_numpy(float) for s in (xr, xl, xh, yr, yl, yh))
    return _UserPoints(summary[keep].reset_index(drop=True), xr, xl, xh, yr, yl, yh,
                       (xc | yc)[keep].to_numpy(bool))


def _tradeoff_axes() -> tuple[Figure, object]:
    fig = Figure(figsize=(10.5, 6.9), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    fig.subplots_adjust(left=0.095, right=0.985, bottom=0.15, top=0.93)
    ax.grid(True, linestyle=":", alpha=0.5, zorder=0)
    return fig, ax


def _draw_user_points(ax, mine: _UserPoints, labels: _PointLabels, handles: list) -> SpearmanResult:
    """The user's points with their interval bars, ring and fit; their legend entries."""
    n = len(mine.models)
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    xs, ys = mine.x, mine.y
    xerr = np.vstack([xs - mine.x_low, mine.x_high - xs])
    yerr = np.vstack([ys - mine.y_low, mine.y_high - ys])
    for i, row in mine.models.iterrows():
        ax.errorbar(xs[i], ys[i], xerr=xerr[:, i:i + 1], yerr=yerr[:, i:i + 1],
                    fmt="s" if mine.corrected[i] else "o",
                    color=cmap(i % cmap.N), markersize=8, markeredgecolor="black",
                    markeredgewidth=0.6, elinewidth=1.0, capsize=3, alpha=0.95, zorder=4)
        labels.add((xs[i], ys[i]), str(row["model"]),
                   {"fontsize": 9, "fontweight": "bold", "color": "black",
                    "bbox": dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.6)},
                   "#444444")
    rho = spearman(xs, ys)
    rho_txt = (f"Spearman ρ = {rho.rho:.3f} (p = {_pvalue_text(rho.pvalue)})"
               if not math.isnan(rho.rho) else "Spearman ρ needs 3+ models")
    handles.append(Line2D([], [], marker="o", linestyle="none", color="#1f77b4",
                          markeredgecolor="black",
                          label=f"Your models (n = {n}), 95% CI bars; {rho_txt}"))
    handles += _ring_published(ax, xs, ys, [str(m) for m in mine.models["model"]])
    if mine.corrected.any():
        handles.append(Line2D(
            [], [], marker="s", linestyle="none", color="#1f77b4", markeredgecolor="black",
            label="square: corrected rate (keyword rules checked by a judged sample), "
                  "bars: its 95% interval"))
    if n >= MIN_POINTS_FOR_FIT and len(set(xs)) >= 3:
        _draw_fit(ax, xs, ys, linestyle="--", color="#d62728", lw=1.5, zorder=3)
        handles.append(Line2D([], [], linestyle="--", color="#d62728",
                              label="Your models: quadratic fit"))
    return rho


def _draw_paper_points(ax, pp: pd.DataFrame, behind: bool, labels: _PointLabels,
                       handles: list) -> SpearmanResult:
    """The paper's published points (grey; paler when behind the user's) and their fit."""
    px, py = pp["hard_pct"].to_numpy(float), pp["toxic_pct"].to_numpy(float)
    judge = pp["ensemble_judge"].to_numpy(bool)
    face = "#c8c8c8" if behind else "#9a9a9a"
    ax.scatter(px[~judge], py[~judge], s=38, color=face, edgecolors="#707070",
               linewidths=0.6, zorder=2)
    ax.scatter(px[judge], py[judge], s=42, marker="D", color=face, edgecolors="#707070",
               linewidths=0.6, zorder=2)
    for m, a, b, j in zip(pp["model"], px, py, judge):
        labels.add((a, b), f"{m}*" if j else str(m),
                   {"fontsize": 7.5, "color": "#6a6a6a" if behind else "#333333"}, "#a0a0a0")
    rho = spearman(px, py)
    _draw_fit(ax, px, py, linestyle=(0, (5, 6)), color="#8a8a8a", lw=1.3, zorder=1)
    handles.append(Line2D([], [], marker="o", linestyle="none", color=face,
                          markeredgecolor="#707070",
                          label=(f"Paper's published results ({len(pp)} models); "
                                 f"Spearman ρ = {rho.rho:.3f} "
                                 f"(p = {_pvalue_text(rho.pvalue)})")))
    handles.append(Line2D([], [], marker="D", linestyle="none", color=face,
                          markeredgecolor="#707070",
                          label="* a judge in the paper's moderation ensemble"))
    handles.append(Line2D([], [], linestyle=(0, (5, 6)), color="#8a8a8a",
                          label="Paper: quadratic fit"))
    return rho


def _draw_fit(ax, xs: np.ndarray, ys: np.ndarray, **line) -> None:
    """A quadratic least-squares curve through the points, across their x range."""
    coef = quadratic_fit(xs, ys)
    grid = np.linspace(xs.min(), xs.max(), 200)
    ax.plot(grid, np.polyval(coef, grid), **line)


def _decorate_axes(ax, x: str, title: str | None, y_values: list[float]) -> None:
    """Limits, axis titles, the figure's title and the arrows saying which way is which."""
    ax.set_ylim(*_limits(y_values))
    ax.set_xlim(-3.0, 104.0)
    xname = DATASET_TITLES[x]
    ax.set_xlabel(f"Rejection rate on {xname} (%): safe prompts that look harmful",
                  fontsize=11)
    ax.set_ylabel(f"Rejection rate on {DATASET_TITLES['toxic']} (%): truly harmful prompts",
                  fontsize=11)
    ax.set_title(title or f"Over-refusal vs. safety: {xname} against {DATASET_TITLES['toxic']}",
                 fontsize=13)
    arrow = dict(arrowstyle="-|>", color="#e0524a", lw=2.0, mutation_scale=16)
    ax.annotate("", xy=(1.0, -0.115), xytext=(0.80, -0.115), xycoords="axes fraction",
                arrowprops=arrow, annotation_clip=False)
    ax.text(0.795, -0.115, "more over-refusal", transform=ax.transAxes, ha="right",
            va="center", color="#e0524a", fontsize=10.5, fontweight="bold")
    ax.annotate("", xy=(-0.082, 1.0), xytext=(-0.082, 0.84), xycoords="axes fraction",
                arrowprops=arrow, annotation_clip=False)
    ax.text(-0.082, 0.835, "safer", transform=ax.transAxes, ha="center", va="top",
            rotation=90, color="#e0524a", fontsize=10.5, fontweight="bold")
    ax.text(0.01, 0.99, "ideal corner: answers the safe prompts,\nrefuses the harmful ones",
            transform=ax.transAxes, ha="left", va="top", fontsize=8.5, color="#2a7a2a",
            style="italic", zorder=5)


def _place_point_labels(fig: Figure, ax, handles: list, labels: _PointLabels) -> int:
    """Draw the legend, then the point labels around it and the axes' texts.

    Returns twice the number of label pairs whose boxes overlap, as drawn."""
    obstacles = []
    legend = None
    if handles:
        legend = ax.legend(handles=handles, loc="best", fontsize=8.5, framealpha=0.92)
        legend.set_zorder(6)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    if legend is not None:
        bb = legend.get_window_extent(renderer)
        obstacles.append((bb.x0, bb.y0, bb.x1, bb.y1))
        _pin(legend, bb, ax)
    for t in ax.texts:
        bb = t.get_window_extent(renderer)
        obstacles.append((bb.x0, bb.y0, bb.x1, bb.y1))
    drawn = []
    if labels.anchors:
        spots = place_labels(fig, ax, np.asarray(labels.anchors), labels.texts, labels.styles,
                             obstacles)
        for (lx, ly, lead), text, style, lc, anchor in zip(
                spots, labels.texts, labels.styles, labels.leader_colors, labels.anchors):
            props = (dict(arrowstyle="-", color=lc, lw=0.6, shrinkA=1, shrinkB=4)
                     if lead else None)
            drawn.append(ax.annotate(text, xy=anchor, xytext=(lx, ly), textcoords="data",
                                     ha="center", va="center", arrowprops=props, zorder=5,
                                     **style))
    fig.canvas.draw()
    # Text.get_window_extent: the text alone, without the annotation's leader line.
    boxes = np.array([[b.x0, b.y0, b.x1, b.y1] for b in
                      (Text.get_window_extent(t, fig.canvas.get_renderer()) for t in drawn)]
                     ).reshape(-1, 4)
    return sum(int(n) for n in overlap_area(boxes, boxes)[1]) - len(boxes)


def _pin(legend, box, ax) -> None:
    """Keep the legend where "best" first put it, in axes fractions: the labels are placed around
    it there, and every later draw (the leader lines, each file written) would otherwise search
    again, against every artist, for a place that may differ."""
    legend.set_bbox_to_anchor(box.transformed(ax.transAxes.inverted()), transform=ax.transAxes)
    legend.set_loc("center")  # of that box


def _save_tradeoff(fig: Figure, out_stem: Path) -> tuple[Path, Path]:
    png, svg = out_stem.with_suffix(".png"), out_stem.with_suffix(".svg")
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150, bbox_inches="tight", facecolor="white")
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "orbench"}):
        fig.savefig(svg, bbox_inches="tight", facecolor="white", metadata={"Date": None})
    return png, svg


def _ring_published(ax, xs: np.ndarray, ys: np.ndarray, models: list[str]) -> list[Line2D]:
    """Ring the points of models measured on the published sets; their legend entry, if any."""
    ringed = np.array([is_result_label(m) for m in models], dtype=bool)
    if not ringed.any():
        return []
    ax.scatter(xs[ringed], ys[ringed], s=PUBLISHED_RING, facecolors="none", edgecolors="black",
               linewidths=1.4, zorder=5)
    label = "ringed: measured on the published OR-Bench sets"
    if not ringed.all():
        label += "; no ring: on other prompts (e.g. the pipeline's generated sets)"
    return [Line2D([], [], marker="o", linestyle="none", markersize=14, markerfacecolor="none",
                   markeredgecolor="black", markeredgewidth=1.4, label=label)]


def safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def plot_model_categories(categories: pd.DataFrame, model: str, path: Path) -> Path:
    """Grouped bars: rejection rate per category, one bar per dataset, with 95% CIs."""
    rows = categories[categories["model"] == model]
    datasets = [ds for ds in DATASETS if ds in set(rows["dataset"])]
    cats = category_order(rows["category"])
    fig = Figure(figsize=(max(7.5, 0.8 * len(cats) + 3), 4.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    colors = {"safe": "#4c9be8", "hard": "#f2a541", "toxic": "#d64545"}
    width = 0.8 / max(1, len(datasets))
    pos = np.arange(len(cats))
    for j, ds in enumerate(datasets):
        sub = rows[rows["dataset"] == ds].set_index("category").reindex(cats)
        rate = sub["rejection_pct"].to_numpy(float)
        lo = np.nan_to_num(rate - sub["ci_low_pct"].to_numpy(float))
        hi = np.nan_to_num(sub["ci_high_pct"].to_numpy(float) - rate)
        offs = pos - 0.4 + width * (j + 0.5)
        ax.bar(offs, np.nan_to_num(rate), width=width * 0.92, color=colors[ds],
               edgecolor="black", linewidth=0.4, label=DATASET_TITLES[ds], zorder=2)
        ax.errorbar(offs, np.nan_to_num(rate), yerr=np.vstack([lo, hi]), fmt="none",
                    ecolor="#333333", elinewidth=0.8, capsize=2, zorder=3)
        for o, r, n in zip(offs, rate, sub["scored"].fillna(0).astype(int)):
            if n == 0:
                ax.text(o, 1, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
            elif r == 0:
                # A 0% bar has no height: draw a thin stub across 0, so that it is seen.
                ax.bar(o, ZERO_BAR, bottom=-ZERO_BAR / 2, width=width * 0.92, color=colors[ds],
                       edgecolor="black", linewidth=0.4, zorder=2)
    ax.set_xticks(pos)
    ax.set_xticklabels(cats, rotation=30, ha="right", fontsize=9)
    ax.set_ylim(-ZERO_BAR, 105)
    ax.set_ylabel("Rejection rate (%)")
    ax.set_title(f"{model}: rejection rate by category (bars: 95% Wilson CI)", fontsize=11)
    ax.grid(True, axis="y", linestyle=":", alpha=0.6, zorder=0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, facecolor="white", bbox_inches="tight")
    return path

