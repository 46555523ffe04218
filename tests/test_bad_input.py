"""Bad input, every stage: one clear line, exit code 2, and no output file.

Stage 1 reads no input file, so the file cases apply to stages 2 to 5 and build_datasets.py;
"unknown category" applies only to stage 1 (the other stages have no category option: they
carry the input's category column along as it is). Unknown models apply to stages 1 to 5
(build_datasets calls no model).

Also: blank prompts are skipped and counted with a warning, and a 1 MB prompt is not sent
unless --max_prompt_chars allows it (our documented rule: longer than --max_prompt_chars,
default 100,000 characters, goes to the failed file with the reason).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.tables.inputs import MAX_PROMPT_CHARS
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.fault_responders import (
    BUILD_DATASETS,
    STAGES,
    StageCli,
    chat,
    expected_rows,
    input_rows,
    message_lines,
    read_csv,
    respond,
    run_stage,
    runinfo,
    write_csv,
)

FILE_STAGES = [2, 3, 4, 5]
ALL_STAGES = [1, 2, 3, 4, 5]


def header(stage: int | str) -> str:
    if stage == "datasets":
        return "prompt,is_toxic,category"
    return ",".join(STAGES[stage].input_columns)


# name -> (make the bad input in a folder, a phrase the one line must hold)
BadFile = Callable[[Path, object], Path]


def _missing(d: Path, stage) -> Path:
    return d / "no_such_file.csv"


def _directory(d: Path, stage) -> Path:
    p = d / "a_folder.csv"
    p.mkdir()
    return p


def _empty(d: Path, stage) -> Path:
    p = d / "empty.csv"
    p.write_bytes(b"")
    return p


def _header_only(d: Path, stage) -> Path:
    p = d / "header_only.csv"
    p.write_text(header(stage) + "\n", encoding="utf-8")
    return p


def _missing_column(d: Path, stage) -> Path:
    p = d / "wrong_columns.csv"
    p.write_text("text,category\nHow do I bake bread?,harmful\n", encoding="utf-8")
    return p


def _not_utf8(d: Path, stage) -> Path:
    p = d / "latin1.csv"
    body = f"{header(stage)}\n" + ",".join(["Caf\xe9 cr\xe8me br\xfbl\xe9e?"] * len(header(stage).split(","))) + "\n"
    p.write_bytes(body.encode("latin-1"))
    return p


BAD_FILES: dict[str, tuple[BadFile, str]] = {
    "missing_file": (_missing, "not found"),
    "directory": (_directory, "is a directory"),
    "empty_file": (_empty, "is empty"),
    "header_only": (_header_only, "has a header but no rows"),
    "missing_column": (_missing_column, "columns found: text, category"),
    "not_utf8": (_not_utf8, "is not UTF-8"),
}


def snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def assert_one_line_exit_2(res, phrase: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr
    lines = message_lines(res.stderr)
    assert len(lines) == 1, lines
    assert len([ln for ln in res.stderr.splitlines() if ln.strip()]) == 1, res.stderr  # no progress bar either
    assert phrase in lines[0], lines[0]
    return lines[0]


def assert_nothing_written(work: Path, before: dict[str, int]) -> None:
    after = snapshot(work)
    assert after == before, sorted(set(after) - set(before))
    for info in work.rglob("*.run.json"):
        assert json.loads(info.read_text()).get("complete") is not True


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture
def fake_models(write_models):
    # The server is never reached: every case fails before a request.
    with FakeOpenAIServer(respond) as srv:
        yield srv, write_models(srv)


@pytest.mark.parametrize("case", list(BAD_FILES))
@pytest.mark.parametrize("stage_no", FILE_STAGES, ids=lambda n: f"stage{n}")
def test_bad_input_file(stage_no, case, work, fake_models):
    srv, models = fake_models
    make, phrase = BAD_FILES[case]
    stage = STAGES[stage_no]
    bad = make(work, stage_no)
    if case == "missing_column" and stage_no == 5:
        phrase = "no 'prompt', 'response' column (columns found: text, category)"
    before = snapshot(work)
    res = run_stage(stage, stage.args(input_file=bad, output=work / "out" / stage.output_name, models_file=models), work)
    line = assert_one_line_exit_2(res, phrase)
    assert str(bad.name) in line
    assert_nothing_written(work, before)
    assert chat(srv) == []


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_input_file_build_datasets(case, work):
    make, phrase = BAD_FILES[case]
    bad = make(work, "datasets")
    before = snapshot(work)
    res = run_stage(_datasets_cli(), ["--rewrite_moderation", str(bad), "--output_dir", str(work / "sets")], work)
    assert_one_line_exit_2(res, phrase)
    assert_nothing_written(work, before)


def _datasets_cli() -> StageCli:
    return StageCli(0, BUILD_DATASETS, "", None, (), "", None)


@pytest.mark.parametrize("stage_no", ALL_STAGES, ids=lambda n: f"stage{n}")
def test_unknown_model(stage_no, work, fake_models):
    srv, models = fake_models
    stage = STAGES[stage_no]
    inp = write_csv(work / "input.csv", input_rows(stage_no, 3)) if stage_no != 1 else None
    before = snapshot(work)
    res = run_stage(stage, stage.args(input_file=inp, output=work / "out" / stage.output_name, models_file=models,
                                      model="no-such-model"), work, env={"OPENAI_API_KEY": None})
    line = assert_one_line_exit_2(res, "unknown model 'no-such-model'")
    assert "fake" in line  # it lists the names it knows
    assert_nothing_written(work, before)


def test_unknown_category(work, fake_models):
    srv, models = fake_models
    stage = STAGES[1]
    before = snapshot(work)
    res = run_stage(stage, stage.args(input_file=None, output=work / "out" / stage.output_name, models_file=models,
                                      extra=["--category=weapons"]), work)
    line = assert_one_line_exit_2(res, "unknown category 'weapons'")
    assert "harmful" in line and "deception" in line  # it lists the ten
    assert_nothing_written(work, before)
    assert chat(srv) == []


# --------------------------------------------------------------------------------------- blank prompts


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("stage_no", FILE_STAGES, ids=lambda n: f"stage{n}")
def test_blank_prompts_are_skipped_counted_and_warned(stage_no, fmt, tmp_path, work, fake_models):
    srv, models = fake_models
    stage = STAGES[stage_no]
    good = input_rows(stage_no, 4)
    blank_values = ["", "   ", "NaN"] if fmt == "csv" else [None, float("nan"), "  "]
    blanks = [{**good[0], "prompt": v} for v in blank_values]
    rows = good[:2] + blanks + good[2:]
    if fmt == "csv":
        inp = write_csv(work / "input.csv", rows)
    else:
        inp = work / "input.parquet"
        pd.DataFrame(rows).to_parquet(inp)
    out = tmp_path / "out" / stage.output_name
    res = run_stage(stage, stage.args(input_file=inp, output=out, models_file=models), work)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    warnings = [ln for ln in message_lines(res.stderr) if ln.startswith("warning:")]
    assert warnings == ["warning: skipped 3 row(s) with an empty 'prompt'"], res.stderr
    assert len(read_csv(out)) == expected_rows(stage_no, 4)
    info = runinfo(out)
    assert info.get("skipped_blank", info.get("skipped_blank_prompts")) == 3, info
    assert len(chat(srv)) == 4  # blank rows are never sent


# --------------------------------------------------------------------------------------- 1 MB prompt

BIG = ("lorem ipsum " * 90_000)[:1_000_000]  # 1 MB of text: 10x the default limit


@pytest.mark.parametrize("stage_no", FILE_STAGES, ids=lambda n: f"stage{n}")
def test_one_megabyte_prompt_not_sent_by_default(stage_no, tmp_path, work, fake_models):
    srv, models = fake_models
    stage = STAGES[stage_no]
    rows = input_rows(stage_no, 4)
    rows[1]["prompt"] = BIG
    inp = write_csv(work / "input.csv", rows)
    out = tmp_path / "out" / stage.output_name
    res = run_stage(stage, stage.args(input_file=inp, output=out, models_file=models), work)
    assert res.returncode == EXIT_ROWS_FAILED, res.stderr  # a row in the failed file: exit 3
    failed = read_csv(stage.failed_path(out))
    assert len(failed) == 1, failed
    col = "toxic_seed" if stage_no == 2 else "prompt"
    assert failed[0][col] == BIG
    length = len(BIG) + (len(rows[1]["response"]) if stage_no == 5 else 0)  # stage 5 sends both
    assert failed[0]["error"] == (f"prompt not sent: {length} characters is over the limit of "
                                  f"{MAX_PROMPT_CHARS} (--max_prompt_chars)")
    assert len(read_csv(out)) == expected_rows(stage_no, 3)
    assert all(len(json.dumps(r.body)) < 100_000 for r in chat(srv))  # never sent
    assert "1 row(s) failed" in res.stderr


@pytest.mark.parametrize("stage_no", FILE_STAGES, ids=lambda n: f"stage{n}")
def test_one_megabyte_prompt_sent_when_allowed(stage_no, tmp_path, work, fake_models):
    srv, models = fake_models
    stage = STAGES[stage_no]
    rows = input_rows(stage_no, 4)
    rows[1]["prompt"] = BIG
    inp = write_csv(work / "input.csv", rows)
    out = tmp_path / "out" / stage.output_name
    res = run_stage(stage, stage.args(input_file=inp, output=out, models_file=models,
                                      extra=["--max_prompt_chars", "2000000"]), work)
    assert res.returncode == 0, res.stderr
    assert not stage.failed_path(out).exists()  # no failure, no failed file
    assert len(read_csv(out)) == expected_rows(stage_no, 4)
    assert sum(BIG in json.dumps(r.body) for r in chat(srv)) == 1


def test_max_prompt_chars_is_documented():
    from orbench.run.runner import build_parser
    from orbench.stages import alignment, check_response, moderate, rewrite

    for spec in (rewrite.Rewrite, moderate.Moderate, alignment.Alignment, check_response.CheckResponse):
        text = " ".join(build_parser(spec, None).format_help().split())
        assert "--max_prompt_chars" in text and "failed file" in text, spec.__name__
    assert MAX_PROMPT_CHARS == 100_000
