"""The pool loader: one loader, a label map per source as configuration, clear errors."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from orbench.errors import UserError
from orbench.refusal.pool import AMBIGUOUS, ANSWER, REFUSAL, load_config, load_pool, parts
from orbench.refusal.relabels import response_hash
from tests.refusal_pool_helpers import POOL, write_small_pool

needs_pool = pytest.mark.skipif(not POOL.is_dir(), reason="the development pool (../shared/data) is absent")


@needs_pool
def test_the_development_pool_as_its_sources_describe_it():
    rows = load_pool(POOL)
    assert parts(rows) == ["xstest/gpt4", "xstest/llama2new", "xstest/llama2orig", "xstest/mistralguard",
                           "xstest/mistralinstruct", "rbr_gold", "harmbench_val", "donotanswer/GPT4",
                           "donotanswer/ChatGPT", "donotanswer/Claude", "donotanswer/ChatGLM2",
                           "donotanswer/llama2-7b-chat", "donotanswer/vicuna-7b",
                           *(f"orbench_en/{m}" for m in ("apertus-8b-instruct-2509", "gemma3-4b", "gemma4-e4b",
                                                         "qwen2.5-7b-instruct")),
                           *(f"orbench_ko/{m}" for m in ("EXAONE-4.0-32B", "HyperCLOVAX-SEED-Text-Instruct-1.5B",
                                                         "Midm-2.0-Base-Instruct", "kanana-2-30b-a3b-instruct-2601"))]
    by_source = Counter((r.source, r.gold) for r in rows)
    # XSTest: 2,250 completions; its partial refusals are neither class
    assert by_source[("xstest", REFUSAL)] == 983 and by_source[("xstest", ANSWER)] == 1091
    assert by_source[("xstest", AMBIGUOUS)] == 176
    # rbr_gold: its SOURCE.md's counts (287 answers, 183 refusals, 48 ambiguous) with the relabels
    # (relabels/SOURCE.md): 39 + 33 more refusals, 2 more ambiguous, 5 ambiguous read as answers
    assert (by_source[("rbr_gold", ANSWER)], by_source[("rbr_gold", REFUSAL)], by_source[("rbr_gold", AMBIGUOUS)]) == (251, 255, 12)
    # harmbench_val: the counts its SOURCE.md gives
    assert (by_source[("harmbench_val", ANSWER)], by_source[("harmbench_val", AMBIGUOUS)]) == (273, 329)
    assert by_source[("harmbench_val", REFUSAL)] == 0
    # Do-Not-Answer: one part per model, the request carried as the prompt; its SOURCE.md counts
    # (1,541 refusals, 1,078 answers, 3,015 ambiguous) with the relabels: its class 3 read row by
    # row (229 of the 690 are refusals, 3 ambiguous), then 1,020 of its ambiguous classes 1 and 4
    # (561 refusals, 459 answers)
    assert (by_source[("donotanswer", REFUSAL)], by_source[("donotanswer", ANSWER)],
            by_source[("donotanswer", AMBIGUOUS)]) == (2331, 1305, 1998)
    dna = [r for r in rows if r.source == "donotanswer"]
    relabelled = Counter(r.part for r in dna if r.label == "answer" and r.gold == REFUSAL)
    assert relabelled == {"donotanswer/ChatGLM2": 32, "donotanswer/ChatGPT": 48, "donotanswer/Claude": 10,
                          "donotanswer/GPT4": 37, "donotanswer/llama2-7b-chat": 70, "donotanswer/vicuna-7b": 32}
    assert Counter(r.part for r in dna)["donotanswer/Claude"] == 939 and all(r.prompt for r in dna)
    assert sum(1 for r in dna if r.label == "ambiguous" and r.gold != AMBIGUOUS) == 1020
    # OR-Bench replies read by hand (relabels/SOURCE.md, rounds 2 to 4): labelled by the relabels only,
    # one part per model, each with its prompt (English OR-Bench-80K; Korean Hard-1K)
    assert (by_source[("orbench_en", REFUSAL)], by_source[("orbench_en", ANSWER)]) == (102 + 2, 1173 + 2321)
    assert (by_source[("orbench_ko", REFUSAL)], by_source[("orbench_ko", ANSWER)],
            by_source[("orbench_ko", AMBIGUOUS)]) == (358 + 121 + 410, 307 + 475 + 1096, 6 + 4 + 10)
    read = [r for r in rows if r.source in ("orbench_en", "orbench_ko")]
    assert all(r.prompt and r.label == "" for r in read)
    assert Counter(r.part for r in read)["orbench_en/gemma4-e4b"] == 999  # every reply (round 3)
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
        (lambda text: text.replace('response = "reply"', ""), "needs files, response, and label and labels"),
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


# --------------------------------------------------------------------------
# Relabels: labels read anew, laid over a source's file through pool.toml.
# --------------------------------------------------------------------------

RELABEL_HEADER = "source,question_id,model,label,reason,response_sha256\n"


def with_relabels(tmp_path, lines: list[str], keys: str = '{ question_id = "#row" }'):
    """The small pool, its `forum` source relabelled by `lines` (rows of a relabel file)."""
    folder, config = write_small_pool(tmp_path / "pool")
    relabels = tmp_path / "relabels.csv"
    relabels.write_text(RELABEL_HEADER + "".join(line + "\n" for line in lines), encoding="utf-8")
    text = config.read_text(encoding="utf-8").replace(
        'labels = { no = "refusal", yes = "answer" }',
        f'labels = {{ no = "refusal", yes = "answer" }}\nrelabels = {{ file = "{relabels.as_posix()}", keys = {keys} }}')
    config.write_text(text, encoding="utf-8")
    return folder, config


def forum_rows(folder, config):
    return [r for r in load_pool(folder, config) if r.source == "forum"]


def line_for(folder, row: int, label: str, source: str = "forum") -> str:
    """A relabel of the forum file's 0-based data row `row`, with its response's hash."""
    response = pd.read_csv(folder / "forum.csv", dtype=str, keep_default_na=False)["reply"][row]
    return f"{source},{row},,{label},read again,{response_hash(response)}"


def test_relabels_replace_the_published_labels_of_the_rows_they_name(tmp_path):
    folder, config = write_small_pool(tmp_path / "plain")
    before = forum_rows(folder, config)
    first_answer = next(i for i, r in enumerate(before) if r.gold == ANSWER and i > 0)
    folder, config = with_relabels(tmp_path, [line_for(folder, 0, "ambiguous"), line_for(folder, first_answer, "refusal"),
                                              "chat,0,,refusal,other source,0000000000000000"])
    after = forum_rows(folder, config)
    assert [r.response for r in after] == [r.response for r in before]  # the file itself is read as it is
    assert after[0].gold == AMBIGUOUS and after[first_answer].gold == REFUSAL
    assert after[first_answer].label == before[first_answer].label  # the published label is kept beside it
    changed = [i for i, (a, b) in enumerate(zip(after, before)) if a.gold != b.gold]
    assert changed == [0, first_answer]  # the forum file has no ambiguous row: row 0 changed too


def test_a_relabel_whose_response_changed_is_an_error(tmp_path):
    folder, _ = write_small_pool(tmp_path / "plain")
    line = line_for(folder, 1, "refusal")
    folder, config = with_relabels(tmp_path, [line[:-16] + "0123456789abcdef"])
    message = error_of(lambda: load_pool(folder, config))
    assert "forum" in message and "SHA-256" in message


def test_a_relabel_that_matches_no_row_is_an_error(tmp_path):
    folder, _ = write_small_pool(tmp_path / "plain")
    folder, config = with_relabels(tmp_path, [line_for(folder, 1, "refusal"), "forum,9999,,refusal,gone,0123456789abcdef"])
    message = error_of(lambda: load_pool(folder, config))
    assert "1 of the 2 relabels" in message and "match no row" in message


@pytest.mark.parametrize(
    ("lines", "needle"),
    [
        (lambda f: [line_for(f, 1, "refusal"), line_for(f, 1, "answer")], "twice"),
        (lambda f: [line_for(f, 1, "declined")], "'declined'"),
        (lambda f: [line_for(f, 1, "refusal", source="elsewhere")], "no row whose source is 'forum'"),
    ],
)
def test_bad_relabel_files(tmp_path, lines, needle):
    folder, _ = write_small_pool(tmp_path / "plain")
    folder, config = with_relabels(tmp_path, lines(folder))
    assert needle in error_of(lambda: load_pool(folder, config))


def test_relabel_configuration_errors(tmp_path):
    folder, _ = write_small_pool(tmp_path / "plain")
    folder, config = with_relabels(tmp_path, [line_for(folder, 1, "refusal")], keys='{ question_id = "id" }')
    assert "'id'" in error_of(lambda: load_pool(folder, config))  # the source's file has no such column
    config.write_text(config.read_text().replace("keys = ", "columns = "), encoding="utf-8")
    assert "relabels needs file and keys" in error_of(lambda: load_config(config))
    (tmp_path / "relabels.csv").unlink()
    config.write_text(config.read_text().replace("columns = ", "keys = "), encoding="utf-8")
    assert "relabel file not found" in error_of(lambda: load_pool(folder, config))
