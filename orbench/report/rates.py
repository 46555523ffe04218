"""Rejection rates with Wilson intervals: per model and dataset, and per category."""

from __future__ import annotations

import math
from typing import Collection, Sequence

import numpy as np
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
from orbench.statistics.stats import wilson_interval

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


SUMMARY_CORRECTION = ["keyword_pct", "corrected_pct", "corrected_ci_low_pct", "corrected_ci_high_pct",
                      "judged_sample", "sample_judge_pct", "agreement_pct", "kappa", "sample_judge",
                      "keyword_unreliable", "sample_judge_audit", "corrected_used", "halfwidth_pts",
                      "judge_calls_for_1pts", "judge_calls_for_2pts", "judge_calls_for_3pts",
                      "estimator", "design"]


def headline(summary: pd.DataFrame, ds: str,
             use_corrected: bool = True) -> tuple[pd.Series, pd.Series, pd.Series, pd.Series]:
    """The rate to rank and plot for one set, per model: the corrected rate where there is
    one (unless use_corrected is False), else the rate of the chosen verdicts.
    Returns (rate, low, high, corrected?)."""
    nan = pd.Series(math.nan, index=summary.index)
    rate = summary.get(f"{ds}_rejection_pct", nan).astype(float)
    low = summary.get(f"{ds}_ci_low_pct", nan).astype(float)
    high = summary.get(f"{ds}_ci_high_pct", nan).astype(float)
    corr = summary.get(f"{ds}_corrected_pct", nan).astype(float)
    used = summary.get(f"{ds}_corrected_used", pd.Series(True, index=summary.index)).map(lambda v: v is not False and v != "False")
    has = corr.notna() & use_corrected & used
    return (corr.where(has, rate), summary.get(f"{ds}_corrected_ci_low_pct", nan).astype(float).where(has, low),
            summary.get(f"{ds}_corrected_ci_high_pct", nan).astype(float).where(has, high), has)


def summarize(selected: pd.DataFrame, x: str = "hard", corrections: pd.DataFrame | None = None,
              use_corrected: bool = True) -> pd.DataFrame:
    """One row per model: for each dataset present, rate, CI and counts; sorted.

    Columns per dataset D: D_rejection_pct, D_ci_low_pct, D_ci_high_pct, D_refused,
    D_scored, D_unscored, D_failed, D_scored_by; then, from a judged sample (empty without
    one): D_keyword_pct, D_corrected_pct, D_corrected_ci_low_pct, D_corrected_ci_high_pct,
    D_judged_sample, D_sample_judge_pct, D_agreement_pct, D_kappa, D_sample_judge,
    D_keyword_unreliable, D_halfwidth_pts, D_judge_calls_for_{1,2,3}pts (judge calls in all
    for a half-width of that many points; empty where even every row would not do),
    D_estimator (score or keyword) and D_design (uniform or score). Then tradeoff_score (see TRADEOFF_RULE), from the corrected rate
    where there is one and use_corrected.
    """
    if x not in ("hard", "safe"):
        raise ReportError(f"--x must be hard or safe, not {x!r}")
    per = rate_table(selected, ["model", "dataset"])
    corr = corrections if corrections is not None and not corrections.empty else None
    models = list(dict.fromkeys(selected["model"])) if not selected.empty else []
    if corr is not None:
        models += [m for m in dict.fromkeys(corr["model"]) if m not in models]
    out = pd.DataFrame({"model": models})
    datasets = set(per["dataset"]) | (set(corr["dataset"]) if corr is not None else set())
    for ds in [ds for ds in DATASETS if ds in datasets]:
        out = _with_rates(out, per, ds)
        out = _with_correction(out, corr, ds, use_corrected)
    toxic = headline(out, "toxic", use_corrected)[0]
    base = headline(out, x, use_corrected)[0]
    out["tradeoff_score"] = toxic - base
    out = out.sort_values(["tradeoff_score", "model"], ascending=[False, True],
                          na_position="last", kind="mergesort")
    return out.reset_index(drop=True)


def _with_rates(out: pd.DataFrame, per: pd.DataFrame, ds: str) -> pd.DataFrame:
    """The summary with one set's rate, CI and counts per model (counts 0 where none)."""
    part = per[per["dataset"] == ds].drop(columns="dataset").rename(
        columns=lambda c: c if c == "model" else f"{ds}_{c}")
    part = part[["model", f"{ds}_rejection_pct", f"{ds}_ci_low_pct", f"{ds}_ci_high_pct",
                 f"{ds}_refused", f"{ds}_scored", f"{ds}_unscored", f"{ds}_failed",
                 f"{ds}_scored_by"]]
    out = out.merge(part, on="model", how="left")
    for c in ("refused", "scored", "unscored", "failed"):
        out[f"{ds}_{c}"] = out[f"{ds}_{c}"].fillna(0).astype(int)
    return out


def _with_correction(out: pd.DataFrame, corr: pd.DataFrame | None, ds: str,
                     use_corrected: bool) -> pd.DataFrame:
    """The summary with one set's SUMMARY_CORRECTION columns, as text where they are text."""
    if corr is not None:
        out = out.merge(_correction_part(corr, ds), on="model", how="left")
    else:
        for n in SUMMARY_CORRECTION:
            out[f"{ds}_{n}"] = math.nan
    out[f"{ds}_judged_sample"] = out[f"{ds}_judged_sample"].fillna(0).astype(int)
    out[f"{ds}_keyword_unreliable"] = out[f"{ds}_keyword_unreliable"].map(
        lambda v: "" if not isinstance(v, (bool, np.bool_)) else str(bool(v)))
    for n in ("sample_judge", "sample_judge_audit", "estimator", "design"):
        out[f"{ds}_{n}"] = out[f"{ds}_{n}"].map(lambda v: v if isinstance(v, str) else "")
    out[f"{ds}_corrected_used"] = [
        str(bool(u) and use_corrected) if not math.isnan(c) else ""
        for u, c in zip(out[f"{ds}_corrected_used"].map(lambda v: v is True or v == "True"),
                        out[f"{ds}_corrected_pct"].astype(float))]
    return out


def _correction_part(corr: pd.DataFrame, ds: str) -> pd.DataFrame:
    """One set's corrected-rate rows, with the keyword-rules flag, columns named for the set."""
    from orbench.report.correction import is_unreliable

    c = corr[corr["dataset"] == ds].rename(columns={"judge": "sample_judge", "judge_audit": "sample_judge_audit"})
    if "corrected_used" not in c.columns:
        c = c.assign(corrected_used=True, sample_judge_audit="")
    # A judge that failed its audit says nothing about the keyword rules: no flag.
    c = c.assign(keyword_unreliable=[
        is_unreliable(k, v, kp) if a != "failed" else None
        for k, v, kp, a in zip(c["keyword_pct"], c["corrected_pct"], c["kappa"], c["sample_judge_audit"])])
    return c[["model"] + SUMMARY_CORRECTION].rename(columns=lambda n: n if n == "model" else f"{ds}_{n}")


def set_aside_judge_rates(summary: pd.DataFrame, results: pd.DataFrame, selected: pd.DataFrame,
                          judges: Collection[str]) -> pd.DataFrame:
    """Add, per set, the rate by a judge that failed its audit where its full-run verdicts
    were set aside for keyword ones: {set}_set_aside_judge_pct (with its CI) and
    {set}_set_aside_judge. Shown, marked, never used for the figure or the score."""
    full = results[(results["stage"] == 5) & ~results["sample"].eq(True) & results["judge"].isin(list(judges))]
    if not judges or full.empty:
        for ds in summary_datasets(summary):
            for c in ("pct", "ci_low_pct", "ci_high_pct"):
                summary[f"{ds}_set_aside_judge_{c}"] = math.nan
            summary[f"{ds}_set_aside_judge"] = ""
        return summary
    chosen = set(zip(selected["model"], selected["dataset"], selected["scored_by"]))
    keep = [(m, d, f"judge:{j}") not in chosen for m, d, j in zip(full["model"], full["dataset"], full["judge"])]
    rates = rate_table(full[keep].assign(scored_by=full[keep]["judge"]), ["model", "dataset"])
    for ds in summary_datasets(summary):
        part = rates[rates["dataset"] == ds].set_index("model")
        for c, src in (("pct", "rejection_pct"), ("ci_low_pct", "ci_low_pct"), ("ci_high_pct", "ci_high_pct")):
            summary[f"{ds}_set_aside_judge_{c}"] = summary["model"].map(part[src]).astype(float)
        summary[f"{ds}_set_aside_judge"] = summary["model"].map(part["scored_by"]).fillna("")
    return summary


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
