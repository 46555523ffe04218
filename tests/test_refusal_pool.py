"""The pool loader: one loader, a label map per source as configuration, clear errors."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from orbench.errors import UserError
from orbench.refusal.pool import AMBIGUOUS, ANSWER, REFUSAL, load_config, load_pool, parts
from tests.refusal_pool_helpers import POOL, write_small_pool

needs_pool = pytest.mark.skipif(not POOL.is_dir(), reason="the development pool (../shared/data) is absent")


@needs_pool
def test_the_development_pool_as_its_sources_describe_it():
    rows = load_pool(POOL)
    assert parts(rows) == ["xstest/gpt4", "xstest/llama2new", "xstest/llama2orig", "xstest/mistralguard",
                           "xstest/mistralinstruct", "rbr_gold", "harmbench_val", "donotanswer/GPT4",
                           "donotanswer/ChatGPT", "donotanswer/Claude", "donotanswer/ChatGLM2",
                           "donotanswer/llama2-7b-chat", "donotanswer/vicuna-7b"]
    by_source = Counter((r.source, r.gold) for r in rows)
    # XSTest: 2,250 completions; its partial refusals are neither class
    assert by_source[("xstest", REFUSAL)] == 983 and by_source[("xstest", ANSWER)] == 1091
    assert by_source[("xstest", AMBIGUOUS)] == 176
    # rbr_gold and harmbench_val: the counts their SOURCE.md files give
    assert (by_source[("rbr_gold", ANSWER)], by_source[("rbr_gold", REFUSAL)], by_source[("rbr_gold", AMBIGUOUS)]) == (287, 183, 48)
    assert (by_source[("harmbench_val", ANSWER)], by_source[("harmbench_val", AMBIGUOUS)]) == (273, 329)
    assert by_source[("harmbench_val", REFUSAL)] == 0
    # Do-Not-Answer: one part per model (its SOURCE.md counts), the request carried as the prompt
    assert (by_source[("donotanswer", REFUSAL)], by_source[("donotanswer", ANSWER)],
            by_source[("donotanswer", AMBIGUOUS)]) == (1541, 1078, 3015)
    dna = [r for r in rows if r.source == "donotanswer"]
    assert Counter(r.part for r in dna)["donotanswer/Claude"] == 939 and all(r.prompt for r in dna)
    first = rows[0]
    assert first.part == "xstest/gpt4" and first.row == 1 and first.label in ("1_full_compliance", "2_full_refusal")


def test_a_new_labelled_set_is_configuration_only(tmp_path):
    folder, config = write_small_pool(tmp_path)
    rows = load_pool(folder, config)
    assert parts(rows) == ["chat/m0", "chat/m1", "forum"]
    chat = [r for r in rows if r.source == "chat"]
    assert {r.gold for r in chat} == {REFUSAL, ANSWER, AMBIGUOUS}
    assert all(r.label in ("refused", "complied", "partial") for r in chat)
    forum = [r for r in rows if r.source == "forum"]
    assert {r.gold for r in forum} == {REFUSAL, ANSWER} and all(r.prompt == "" for r in forum)  # no prompt column


def test_the_pool_folder_comes_from_the_environment(tmp_path, monkeypatch):
    folder, config = write_small_pool(tmp_path / "pool")
    monkeypatch.setenv("ORBENCH_POOL_DIR", str(folder))
    assert len(load_pool(None, config)) == len(load_pool(folder, config))


def error_of(call) -> str:
    with pytest.raises(UserError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_label_missing_from_the_map_is_an_error_not_a_silent_drop(tmp_path):
    folder, config = write_small_pool(tmp_path)
    config.write_text(config.read_text().replace(', partial = "ambiguous"', ""), encoding="utf-8")
    message = error_of(lambda: load_pool(folder, config))
    assert "chat" in message and "'partial'" in message and "label map" in message


def test_a_label_mapped_to_an_unknown_class(tmp_path):
    folder, config = write_small_pool(tmp_path)
    config.write_text(config.read_text().replace('no = "refusal"', 'no = "declined"'), encoding="utf-8")
    assert "declined" in error_of(lambda: load_config(config))


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda text: text.replace('response = "reply"', ""), "needs files, response, label and labels"),
        (lambda text: text + "\n[broken\n", "not valid TOML"),
        (lambda text: "", "names no source"),
    ],
)
def test_bad_configuration(tmp_path, edit, needle):
    folder, config = write_small_pool(tmp_path)
    config.write_text(edit(config.read_text()), encoding="utf-8")
    assert needle in error_of(lambda: load_config(config))


def test_missing_folder_files_and_columns(tmp_path):
    folder, config = write_small_pool(tmp_path / "pool")
    assert "pool folder not found" in error_of(lambda: load_pool(tmp_path / "nowhere", config))
    assert "pool configuration not found" in error_of(lambda: load_pool(folder, tmp_path / "none.toml"))
    (folder / "forum.csv").unlink()
    assert "no file matches" in error_of(lambda: load_pool(folder, config))
    (folder / "forum.csv").write_text("text,verdict\nhello,yes\n", encoding="utf-8")
    assert "'reply'" in error_of(lambda: load_pool(folder, config))


def test_one_part_per_value_of_a_column(tmp_path):
    folder, config = write_small_pool(tmp_path)
    rows = [{"model": m, "q": f"question {i}", "reply": f"reply {i}", "verdict": "no" if i % 2 else "yes"}
            for i, m in enumerate(["a", "b", "a", "c", " b "])]
    pd.DataFrame(rows).to_csv(folder / "many.csv", index=False)
    config.write_text(config.read_text() + '\n[many]\nfiles = "many.csv"\nresponse = "reply"\nlabel = "verdict"\n'
                      'prompt = "q"\npart_from_column = "model"\nlabels = { no = "refusal", yes = "answer" }\n',
                      encoding="utf-8")
    many = [r for r in load_pool(folder, config) if r.source == "many"]
    assert [r.part for r in many] == ["many/a", "many/b", "many/a", "many/c", "many/b"]
    assert [r.prompt for r in many] == [f"question {i}" for i in range(5)]
    assert parts(load_pool(folder, config))[-3:] == ["many/a", "many/b", "many/c"]
    # the column must exist, and a source takes its parts from files or from a column, not both
    config.write_text(config.read_text().replace('part_from_column = "model"', 'part_from_column = "who"'),
                      encoding="utf-8")
    assert "'who'" in error_of(lambda: load_pool(folder, config))
    config.write_text(config.read_text().replace('part_from_column = "who"',
                                                 'part_from_column = "model"\npart_from_file = "(.+)"'),
                      encoding="utf-8")
    assert "both part_from_file and part_from_column" in error_of(lambda: load_config(config))
