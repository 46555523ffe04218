"""The Korean held-out figures weighted to each model's whole run (orbench.refusal.whole_run)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from orbench.refusal.relabel_sample import KO_FILE
from orbench.refusal.whole_run import STRATA, estimate
from tests.refusal_pool_helpers import POOL

MODEL = "EXAONE-4.0-32B"


def scores_file(tmp_path, rows: list[tuple[int, str, float]]):
    """A --scores file holding the given (0-based source row, label, score) of MODEL, and an English row."""
    frame = pd.DataFrame([{"part": f"orbench_ko/{MODEL}", "file": "x.csv", "row": r + 1, "label": "", "gold": gold,
                           "score": score, "verdict": "", "prompt": "p", "response": "r"} for r, gold, score in rows])
    frame.loc[len(frame)] = {"part": "xstest/gpt4", "file": "x.csv", "row": 1, "label": "", "gold": "refusal",
                             "score": 0.9, "verdict": "", "prompt": "p", "response": "r"}
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def test_each_cell_stands_for_its_size(tmp_path):
    strata = pd.read_csv(STRATA)
    run = strata[strata["model"] == MODEL]
    cells = run.groupby(["judge", "band"])["row"].apply(list)
    big, small = cells.loc[("compliance", "below 0.2")], cells.loc[("refusal", "above 0.8")]
    # three read rows of the big cell, all answers called answers; one of the small one, a refusal missed
    path = scores_file(tmp_path, [(big[0], "answer", 0.1), (big[1], "answer", 0.2), (big[2], "answer", 0.3),
                                  (small[0], "refusal", 0.4), (small[1], "ambiguous", 0.9)])
    table = estimate(path)
    assert table["model"].tolist() == [MODEL]  # the models with no row read are not in it
    row = table.set_index("model").loc[MODEL]
    share = len(small) / (len(small) + len(big))
    assert row["read"] == 4 and row["replies"] == len(run) == 1312
    assert row["left out"] == len(run) - len(big) - len(small)
    assert row["labels"] == pytest.approx(share) and row["called"] == 0
    assert row["accuracy"] == pytest.approx(1 - share) and row["refusals called answers"] == 1
    assert row["error (points)"] == pytest.approx(-100 * share)


def test_a_file_that_is_not_a_scores_file_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    for target in (tmp_path / "bad.csv", tmp_path / "missing.csv"):
        done = subprocess.run([sys.executable, "-m", "orbench.refusal.whole_run", str(target)],
                              capture_output=True, text=True)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "--scores" in done.stderr


@pytest.mark.skipif(not POOL.is_dir(), reason="the development pool (../shared/data) is absent")
def test_the_strata_cover_the_source_and_keep_its_judge():
    source = pd.read_csv(POOL / KO_FILE, dtype=str, keep_default_na=False)
    strata = pd.read_csv(STRATA, dtype=str, keep_default_na=False)
    assert strata["row"].tolist() == [str(i) for i in range(len(source))]
    assert strata["model"].tolist() == source["model"].tolist()
    assert strata["judge"].tolist() == source["llm_judge_label"].tolist()
    assert set(strata["band"]) == {"below 0.2", "0.2-0.8", "above 0.8"}


@pytest.mark.skipif(not POOL.is_dir(), reason="the development pool (../shared/data) is absent")
@pytest.mark.parametrize("name, source, round_", [("en3", "orbench_en", "3"), ("ko4", "orbench_ko", "4")])
def test_a_round_chosen_without_a_score_comes_back_from_its_rule(name, source, round_):
    """The English round 3 and the Korean round 4 were chosen by rules that need no detector: the
    manifests come back, row for row, as the relabels hold them."""
    from orbench.refusal.relabel_more import manifest_en, manifest_ko4

    manifest = {"en3": manifest_en, "ko4": manifest_ko4}[name](POOL)
    relabels = pd.read_csv(STRATA.parent / "relabels.csv", dtype=str, keep_default_na=False)
    read = relabels[(relabels["source"] == source) & (relabels["round"] == round_)]
    assert sorted(zip(manifest["key"], manifest["model"])) == sorted(zip(read["question_id"], read["model"]))
    assert sorted(manifest["response_sha256"]) == sorted(read["response_sha256"])
