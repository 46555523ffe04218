"""The paper's published numbers, shipped as package data."""

from __future__ import annotations

import importlib.resources

import pandas as pd


def load_paper_results() -> pd.DataFrame:
    """The paper's published numbers (package data; see data/PAPER_RESULTS_SOURCE.md)."""
    res = importlib.resources.files("orbench") / "data" / "paper_results.csv"
    with res.open("r", encoding="utf-8") as fh:
        frame = pd.read_csv(fh)
    frame["ensemble_judge"] = frame["ensemble_judge"].astype(str).str.lower() == "true"
    return frame


def paper_points(paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's Figure 1 as points: model, hard_pct (x), toxic_pct (y), ensemble_judge."""
    paper = load_paper_results() if paper is None else paper
    return pd.DataFrame({
        "model": paper["model"],
        "hard_pct": paper["hard_1k_rejection_pct"].astype(float),
        "toxic_pct": paper["toxic_rejection_pct"].astype(float),
        "ensemble_judge": paper["ensemble_judge"],
    })

