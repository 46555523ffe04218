"""Rejection rates with Wilson intervals: per model and dataset, and per category."""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from orbench.report.common import (
    ANSWERED,
    DATASETS,
    FAILED,
    OUTCOMES,
    REFUSED,
    UNSCORED,
    ReportError,
    category_order,
)
from orbench.stats import wilson_interval

def rate_table(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Counts and rejection rate (%, with Wilson 95% CI) for each group of keys."""
    keys = list(keys)
    columns = keys + ["refused", "answered", "scored", "unscored", "failed",
                      "rejection_pct", "ci_low_pct", "ci_high_pct", "scored_by"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    counts = rows.groupby(keys + ["outcome"], sort=False).size().unstack("outcome", fill_value=0)
    counts = counts.reindex(columns=list(OUTCOMES), fill_value=0)
    table = counts.reset_index()
    table.columns.name = None
    table["scored"] = table[REFUSED] + table[ANSWERED]
    lows, highs, rates = [], [], []
    for k, n in zip(table[REFUSED], table["scored"]):
        lo, hi = wilson_interval(int(k), int(n))
        rates.append(100.0 * k / n if n else math.nan)
        lows.append(100.0 * lo)
        highs.append(100.0 * hi)
    table["rejection_pct"] = rates
    table["ci_low_pct"] = lows
    table["ci_high_pct"] = highs
    if "scored_by" in rows.columns:
        by = rows.groupby(keys, sort=False)["scored_by"].first().reset_index()
        table = table.merge(by, on=keys, how="left")
    else:
        table["scored_by"] = ""
    table = table.rename(columns={REFUSED: "refused", ANSWERED: "answered",
                                  UNSCORED: "unscored", FAILED: "failed"})
    return table[columns]


def summarize(selected: pd.DataFrame, x: str = "hard") -> pd.DataFrame:
    """One row per model: for each dataset present, rate, CI and counts; sorted.

    Columns per dataset D: D_rejection_pct, D_ci_low_pct, D_ci_high_pct, D_refused,
    D_scored, D_unscored, D_failed, D_scored_by. Then tradeoff_score (see TRADEOFF_RULE).
    """
    if x not in ("hard", "safe"):
        raise ReportError(f"--x must be hard or safe, not {x!r}")
    per = rate_table(selected, ["model", "dataset"])
    models = list(dict.fromkeys(selected["model"])) if not selected.empty else []
    out = pd.DataFrame({"model": models})
    present = [ds for ds in DATASETS if ds in set(per["dataset"])]
    for ds in present:
        part = per[per["dataset"] == ds].drop(columns="dataset").rename(
            columns=lambda c: c if c == "model" else f"{ds}_{c}")
        part = part[["model", f"{ds}_rejection_pct", f"{ds}_ci_low_pct", f"{ds}_ci_high_pct",
                     f"{ds}_refused", f"{ds}_scored", f"{ds}_unscored", f"{ds}_failed",
                     f"{ds}_scored_by"]]
        out = out.merge(part, on="model", how="left")
        for c in ("refused", "scored", "unscored", "failed"):
            out[f"{ds}_{c}"] = out[f"{ds}_{c}"].fillna(0).astype(int)
    toxic = out.get("toxic_rejection_pct", pd.Series(math.nan, index=out.index))
    base = out.get(f"{x}_rejection_pct", pd.Series(math.nan, index=out.index))
    out["tradeoff_score"] = toxic.astype(float) - base.astype(float)
    out = out.sort_values(["tradeoff_score", "model"], ascending=[False, True],
                          na_position="last", kind="mergesort")
    return out.reset_index(drop=True)


def category_table(selected: pd.DataFrame, model_order: Sequence[str] | None = None) -> pd.DataFrame:
    """Rate per (model, dataset, category), the paper's categories first, in order."""
    table = rate_table(selected, ["model", "dataset", "category"])
    if table.empty:
        return table
    cat_rank = {c: i for i, c in enumerate(category_order(table["category"]))}
    order = list(model_order) if model_order is not None else sorted(set(table["model"]))
    model_rank = {m: i for i, m in enumerate(order)}
    ds_rank = {d: i for i, d in enumerate(DATASETS)}
    table = table.assign(
        _m=table["model"].map(lambda m: model_rank.get(m, len(model_rank))),
        _d=table["dataset"].map(ds_rank), _c=table["category"].map(cat_rank))
    return table.sort_values(["_m", "_d", "_c"]).drop(columns=["_m", "_d", "_c"]).reset_index(drop=True)



def summary_datasets(summary: pd.DataFrame) -> list[str]:
    """The datasets the summary has rates for, in the report's order."""
    return [ds for ds in DATASETS if f"{ds}_rejection_pct" in summary.columns]
