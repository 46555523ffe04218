"""Input formats besides CSV and parquet, chosen by extension: .jsonl, .json (a list of
records) and .tsv. Each reads to the same strings a CSV of the same rows gives, and each way
such a file can be wrong is one line (exit 2 in a stage)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from orbench.errors import UserError
from orbench.stages.alignment import main as stage4_main
from orbench.tables.table_io import read_table
from tests.stage_helpers import (  # noqa: F401  (fixtures)
    clone, error_lines, fake_entry, harness, read_csv, run_script, write_models,
)

ROWS = [
    {"prompt": "How do I bake bread?", "category": "harmful"},
    {"prompt": 'Say "hi",\tthen\nleave', "category": "privacy"},
    {"prompt": "Café crème brûlée?\u2028(a line separator JSON keeps raw)", "category": ""},
]


def write_format(path, rows=ROWS):
    ext = path.suffix.lower()
    if ext == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    elif ext == ".json":
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    elif ext == ".tsv":
        pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    else:
        pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("ext", [".jsonl", ".json", ".tsv", ".JSONL"])
def test_each_format_reads_like_the_csv(tmp_path, ext):
    want = read_table(write_format(tmp_path / "rows.csv"), ["prompt"])
    got = read_table(write_format(tmp_path / f"rows{ext}"), ["prompt", "category"])
    assert got.to_dict("records") == want.to_dict("records") == ROWS
    assert got.attrs["input_source"] is None  # a local file, not the Hub


def test_json_values_become_cells(tmp_path):
    """null is an empty cell, numbers and booleans their text, nested values stay JSON; a key
    missing from a record is an empty cell; columns in first-seen order."""
    p = tmp_path / "r.jsonl"
    p.write_text('{"prompt": "a", "n": 1, "ok": true}\n\n{"prompt": "b", "meta": {"k": [1, 2]}, "n": null}\n',
                 encoding="utf-8")
    df = read_table(p, ["prompt"])
    assert list(df.columns) == ["prompt", "n", "ok", "meta"]
    assert df.to_dict("records") == [
        {"prompt": "a", "n": "1", "ok": "True", "meta": ""},
        {"prompt": "b", "n": "", "ok": "", "meta": '{"k": [1, 2]}'},
    ]


def test_utf8_bom_is_accepted(tmp_path):
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"prompt": "x"}]).encode())
    assert list(read_table(p, ["prompt"])["prompt"]) == ["x"]


@pytest.mark.parametrize("name, content, message", [
    ("bad.jsonl", '{"prompt": "a"}\n{"prompt": \n', "line 2 is not valid JSON"),
    ("list.jsonl", '{"prompt": "a"}\n["prompt"]\n', "line 2 is a JSON list, not an object"),
    ("blank.jsonl", "\n\n", "holds no JSON records"),
    ("bad.json", '[{"prompt": "a"},', "is not valid JSON"),
    ("object.json", '{"prompt": ["a", "b"]}', "is a JSON object; expected a list of records"),
    ("strings.json", '["a", "b"]', "item 0 is a JSON string; expected a list of records"),
    ("empty_list.json", "[]", "is an empty list: no rows"),
    ("no_prompt.json", '[{"text": "a"}]', "has no 'prompt' column (columns found: text)"),
    ("empty.tsv", "", "is empty"),
    ("header_only.tsv", "prompt\tcategory\n", "has a header but no rows"),
    ("latin1.jsonl", b'{"prompt": "caf\xe9"}\n', "is not UTF-8"),
    ("latin1.json", b'[{"prompt": "caf\xe9"}]', "is not UTF-8"),
    ("latin1.tsv", b"prompt\ncaf\xe9\n", "is not UTF-8"),
])
def test_bad_files_are_one_line(tmp_path, name, content, message):
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    with pytest.raises(UserError) as err:
        read_table(p, ["prompt"])
    text = str(err.value)
    assert message in text and "\n" not in text and str(p) in text


def test_a_stage_reads_jsonl_and_tsv(harness):
    harness.serve()
    write_format(harness.work / "p.jsonl")
    write_format(harness.work / "p.tsv")
    assert harness.run(stage4_main, "--model", "fake", "--input_file", "p.jsonl") == 0
    assert harness.run(stage4_main, "--model", "fake", "--input_file", "p.tsv", "--output_path", "tsv.csv") == 0
    a = read_csv(harness.work / "final_fake_results" / "fake_merged_p.csv")
    assert list(a["prompt"]) == [r["prompt"] for r in ROWS]
    assert list(a["category"]) == [r["category"] for r in ROWS]
    assert read_csv(harness.work / "tsv.csv").equals(a)


def test_a_stage_stops_at_bad_json_with_one_line(clone, tmp_path):
    (clone / "alignment_checker" / "p.json").write_text('{"prompt": "a"}', encoding="utf-8")
    models = write_models(tmp_path / "models.toml", {"fake": {"model": "m", "base_urls": ["http://127.0.0.1:9/v1"]}})
    proc = run_script(clone, "alignment_checker", "--model=fake", "--input_file=p.json", f"--models_file={models}")
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "p.json is a JSON object; expected a list of records" in lines[0], proc.stderr
