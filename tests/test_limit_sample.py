"""--limit N: a seeded sample of N input rows spread over the categories, not the first N rows."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from orbench.tables.sampling import stratified
from orbench.tables.inputs import prepare_rows
from orbench.stages.alignment import main

from tests.stage_helpers import harness, read_csv, runinfo, write_csv  # noqa: F401  (fixture)


def _ids(n: int) -> list[str]:
    return [f"row-{i}" for i in range(n)]


def test_every_category_is_present_and_shares_follow_the_sizes():
    strata = ["big"] * 70 + ["mid"] * 25 + ["small"] * 5
    for size in (3, 10, 40, 99):
        chosen = stratified(_ids(100), strata, size, seed=0)
        counts = Counter(strata[i] for i in chosen)
        assert len(chosen) == size and set(counts) == {"big", "mid", "small"}
        assert chosen == sorted(chosen)  # input order
        assert counts["big"] >= counts["mid"] >= counts["small"]
        if size >= 10:  # past the one-per-category floor, shares are proportional
            assert abs(counts["big"] - 0.7 * size) <= 1 + 0.03 * size


def test_same_seed_same_rows_other_seed_other_rows():
    strata = [f"c{i % 10}" for i in range(500)]
    a = stratified(_ids(500), strata, 40, seed=0)
    assert a == stratified(_ids(500), strata, 40, seed=0)
    assert a != stratified(_ids(500), strata, 40, seed=1)
    assert Counter(strata[i] for i in a) == Counter({f"c{i}": 4 for i in range(10)})


def test_fewer_rows_than_categories_takes_one_row_of_as_many_categories():
    strata = [f"c{i % 10}" for i in range(100)]
    chosen = stratified(_ids(100), strata, 4, seed=3)
    assert len(chosen) == 4 and len({strata[i] for i in chosen}) == 4


def test_a_size_past_the_rows_keeps_them_all():
    assert stratified(_ids(5), ["a"] * 5, 9, seed=0) == [0, 1, 2, 3, 4]


def test_blank_rows_are_dropped_before_the_sample():
    df = pd.DataFrame({"prompt": ["", "q1", "q2", " ", "q3"], "category": ["a", "a", "b", "b", "b"]})
    prepared = prepare_rows(df, "prompt", 2)
    assert prepared.skipped_blank == 2
    assert sorted(r["category"] for r in prepared.rows) == ["a", "b"]


def test_stage4_limit_samples_every_category_and_records_the_seed(harness):
    harness.serve()
    prompts = [f"How do tides work, question {i}?" for i in range(60)]
    categories = ["harmful"] * 50 + ["privacy"] * 10  # the demo's case: the first rows are all one category
    write_csv(harness.work / "p.csv", {"prompt": prompts, "category": categories})
    assert harness.run(main, "--model", "fake", "--input_file", "p.csv", "--limit", "6", "--limit_seed", "7") == 0
    out = harness.work / "final_fake_results" / "fake_merged_p.csv"
    df = read_csv(out)
    assert Counter(df["category"]) == Counter({"harmful": 5, "privacy": 1})
    info = runinfo(out)
    assert info["limit"] == 6 and info["limit_seed"] == 7
