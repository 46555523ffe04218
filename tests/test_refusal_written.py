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

# file: (language, floor). Each floor is at or under the accuracy measured when its set was written
# or last changed; docs/refusal/languages.md has every figure, first measured and after the changes
# a set's misses informed, and tests/written/README.md how each set was written.
FLOORS = {"zh_a.csv": ("zh", 0.86), "zh_b.csv": ("zh", 0.90), "zh_c.csv": ("zh", 0.94), "zh_d.csv": ("zh", 0.78),
          "zh_e.csv": ("zh", 0.80), "zh_f.csv": ("zh", 0.78), "zh_g.csv": ("zh", 0.78), "zh_h.csv": ("zh", 0.71),
          "zh_i.csv": ("zh", 0.71),
          "ja_b.csv": ("ja", 0.90), "ja_c.csv": ("ja", 0.89), "ja_d.csv": ("ja", 0.66), "ja_e.csv": ("ja", 0.75),
          "ja_f.csv": ("ja", 0.78), "ja_g.csv": ("ja", 0.78), "ja_h.csv": ("ja", 0.76), "ja_i.csv": ("ja", 0.65),
          "ja_j.csv": ("ja", 0.71),
          "en_a.csv": ("en", 0.76), "en_b.csv": ("en", 0.71), "en_c.csv": ("en", 0.68), "en_d.csv": ("en", 0.73),
          "en_e.csv": ("en", 0.75), "en_f.csv": ("en", 0.75)}


def _rows(name: str) -> list[dict[str, str]]:
    with (WRITTEN / name).open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_written_replies_are_read_in_their_language_and_scored_above_the_floor(name):
    language, floor = FLOORS[name]
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
             "ja7": "ja_g.csv", "zh7": "zh_g.csv", "ja8": "ja_h.csv", "zh8": "zh_h.csv", "ja9": "ja_i.csv",
             "en3": "en_c.csv", "en4": "en_d.csv", "zh9": "zh_i.csv", "ja10": "ja_j.csv",
             "en5": "en_f.csv", "en6": "en_e.csv"}
    second = _rows("second_reader.csv")
    assert {row["id"].split(":")[0] for row in second} == set(files)
    written = {prefix: _rows(name) for prefix, name in files.items()}  # each file read once
    for row in second:
        prefix, n = row["id"].split(":")
        # the one disagreement (tests/written/README.md): the writer's label is kept
        agrees = written[prefix][int(n)]["label"] == row["label"]
        assert agrees != (row["id"] in _DISAGREE), row
    assert len(second) == 412
