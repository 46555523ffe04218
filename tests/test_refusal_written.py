"""The scored detector on Chinese and Japanese replies written for measurement (tests/written/):
every reply read in its language and scored, and the accuracy at or above a floor just under
what was measured when these were written (docs/refusal/languages.md has the figures, before
and after the changes some of the misses informed)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from orbench.refusal import detect
from orbench.refusal.features import read

WRITTEN = Path(__file__).with_name("written")

# file: (language, measured accuracy, floor)
FLOORS = {"zh_a.csv": ("zh", 0.883, 0.86), "zh_b.csv": ("zh", 0.925, 0.90), "zh_c.csv": ("zh", 0.970, 0.94),
          "ja_b.csv": ("ja", 0.925, 0.90), "ja_c.csv": ("ja", 0.912, 0.89)}


def _rows(name: str) -> list[dict[str, str]]:
    with (WRITTEN / name).open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_written_replies_are_read_in_their_language_and_scored_above_the_floor(name):
    language, _, floor = FLOORS[name]
    rows = _rows(name)
    assert {r["label"] for r in rows} == {"refusal", "answer"}
    right = 0
    for row in rows:
        assert read(row["response"]).structure.language == language, row["response"][:40]
        found = detect(row["response"], prompt=row["prompt"])
        assert found.score is not None
        right += (found.kind.value == "refused") == (row["label"] == "refusal")
    assert right / len(rows) >= floor, f"{name}: accuracy {right / len(rows):.3f} below {floor}"
