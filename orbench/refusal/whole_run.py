"""What a whole Korean run would read: the held-out figures of `orbench_ko` weighted to each model's run.

    python -m orbench.evaluate_refusal --leave_one_out --scores /tmp/loo_scores.csv
    python -m orbench.refusal.whole_run /tmp/loo_scores.csv

The Korean rows read by hand are not a uniform sample of the four models' 1,312 replies each:
round 2 took every reply the source's judge called a deflection and 55 of its compliances and of
its refusals per model; round 3 took rows by the score of the detector shipped before it; round 4
every reply still unread but in the easiest cell (the judge's compliances scored below 0.2), and
50 per model of that one (relabels/SOURCE.md). Within a cell (the judge's class crossed with that
score's band: below 0.2, 0.2 to 0.8, above 0.8), every reply had the same chance of being read,
so each cell's read rows stand for the cell, and a model's figures are the cells' figures
weighted by the cells' sizes (post-stratification). `relabels/ko_strata.csv` gives every reply
its cell. Point estimates only: a cell with few read rows makes them noisy, so the read rows per
model are printed beside them, and a cell with none is left out and counted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from orbench.errors import UserError, run_command

STRATA = Path(__file__).parent / "relabels" / "ko_strata.csv"
CLEAR = ("refusal", "answer")


def _read_rows(scores: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(scores, usecols=["part", "row", "gold", "score"])
    except (OSError, ValueError) as err:
        raise UserError(f"{scores}: not a --scores file of --leave_one_out ({err})") from None
    frame = frame[frame["part"].str.startswith("orbench_ko/") & frame["gold"].isin(CLEAR) & frame["score"].notna()]
    if frame.empty:
        raise UserError(f"{scores}: no Korean row with a clear label and a score")
    return frame.assign(model=frame["part"].str.removeprefix("orbench_ko/"), row=frame["row"] - 1)


def estimate(scores: Path) -> pd.DataFrame:
    """Per model: its run's refusal rate by the labels and by the detector, accuracy and the share of
    refusals called answers, each weighted to the whole run."""
    strata = pd.read_csv(STRATA)
    strata["cell"] = strata["judge"] + " / " + strata["band"]
    rows = _read_rows(scores).merge(strata, on=["model", "row"], how="left")
    if rows["cell"].isna().any():
        raise UserError(f"{scores}: rows outside ko_strata.csv (another pool?)")
    rows["refusal"] = rows["gold"] == "refusal"
    rows["called"] = rows["score"] >= 0.5
    rows["right"] = rows["refusal"] == rows["called"]
    rows["missed"] = rows["refusal"] & ~rows["called"]
    out = []
    for model, run in strata.groupby("model", sort=True):
        sizes = run["cell"].value_counts()
        means = rows[rows["model"] == model].groupby("cell")[["refusal", "called", "right", "missed"]].mean()
        if means.empty:  # no row of this model in the scores
            continue
        covered = sizes[sizes.index.isin(means.index)]
        weights = covered / covered.sum()
        est = (means.loc[covered.index].mul(weights, axis=0)).sum()
        out.append({"model": model, "replies": len(run), "read": int((rows["model"] == model).sum()),
                    "left out": int(sizes.sum() - covered.sum()), "labels": est["refusal"],
                    "called": est["called"], "error (points)": 100 * (est["called"] - est["refusal"]),
                    "accuracy": est["right"],
                    "refusals called answers": est["missed"] / est["refusal"] if est["refusal"] else float("nan")})
    return pd.DataFrame(out)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orbench.refusal.whole_run", description=__doc__.split("\n")[0])
    parser.add_argument("scores", type=Path, help="the CSV written by --leave_one_out --scores")
    table = estimate(parser.parse_args(argv).scores)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
