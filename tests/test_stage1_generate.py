"""Stage 1 (toxic_prompt_generator): batches of 20, the last batch asks only for what is still
needed, exact dedup across the run, --num_toxic_prompts / --limit, unknown category."""

from __future__ import annotations

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.protocol.constants import CATEGORIES
from orbench.stages.generate import main
from tests.responders import generator_items, generator_request
from tests.stage_helpers import (  # noqa: F401  (fixtures)
    asked_counts, chat_requests, clone, error_lines, fake_entry, harness, read_csv, run_script, runinfo, write_models,
)
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.responders import protocol_responder

FOLDER = "toxic_prompt_generator"


def test_cli_from_its_folder_writes_the_default_file(clone, tmp_path):
    with FakeOpenAIServer(protocol_responder) as srv:
        models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
        proc = run_script(clone, FOLDER, "--category=harmful", "--num_toxic_prompts=45", "--model=fake",
                          f"--models_file={models}")
        asked = asked_counts(srv)
        bodies = [r.body for r in chat_requests(srv)]
    assert proc.returncode == 0, proc.stderr
    out = clone / FOLDER / "harmful_prompts.csv"
    df = read_csv(out)
    assert list(df.columns) == ["prompt", "category"]
    assert len(df) == 45 and df["prompt"].is_unique
    assert set(df["category"]) == {"harmful"}
    # Two full batches and a last one that asks only for the 5 still needed.
    assert sorted(asked) == [5, 20, 20]
    assert {b["temperature"] for b in bodies} == {1.0}
    assert sorted(b["seed"] for b in bodies) == [0, 1, 2]  # one sample number per call
    info = runinfo(out)
    assert info["complete"] is True and info["rows_written"] == 45
    assert info["model"] == "fake" and info["category"] == "harmful" and info["temperature"] == 1.0
    assert "wrote 45 unique harmful prompts" in proc.stdout


def test_help_names_inputs_outputs_and_defaults(clone):
    proc = run_script(clone, FOLDER, "--help")
    assert proc.returncode == 0
    text = proc.stdout
    for needle in ("--category", "--num_toxic_prompts", "default 2000", "{category}_prompts.csv",
                   "prompt, category", "--output_path", "--model", "20"):
        assert needle in text, needle
    assert all(c in text for c in CATEGORIES)


def test_unknown_category_is_one_line_and_exit_2(clone):
    proc = run_script(clone, FOLDER, "--category=spam", "--num_toxic_prompts=3")
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert "unknown category 'spam'" in lines[0] and "harmful" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (clone / FOLDER / "spam_prompts.csv").exists()


def test_last_wave_asks_for_the_shortfall_left_by_duplicates(harness):
    def responder(request):
        n, category, sample = generator_request(request)
        if sample == 1:  # half of this batch repeats sample 0, and one item repeats inside the reply
            old = generator_items(category, 0, 4)
            items = old[:2] + [old[1]] + old[2:] + generator_items(category, 1, n - 5)
        else:
            items = generator_items(category, sample, n)
        return "Here you are:\n" + "\n".join(f"[[{x}]]" for x in items)

    srv = harness.serve(responder)
    assert harness.run(main, "--category", "privacy", "--num_toxic_prompts", "30", "--model", "fake") == 0
    asked = asked_counts(srv)
    assert sorted(asked[:2]) == [10, 20]  # first wave: a full batch and the 10 still needed
    # sample 1 gave only 5 new prompts: the next wave asks for exactly the 5 missing
    assert asked[2:] == [5]
    df = read_csv(harness.work / "privacy_prompts.csv")
    assert len(df) == 30 and df["prompt"].is_unique
    expected = generator_items("privacy", 0, 20) + generator_items("privacy", 1, 5) + generator_items("privacy", 2, 5)
    assert list(df["prompt"]) == expected  # sample order, first occurrence wins


def test_limit_caps_the_target(harness):
    srv = harness.serve()
    assert harness.run(main, "--category", "hate", "--num_toxic_prompts", "2000", "--limit", "7", "--model", "fake") == 0
    assert asked_counts(srv) == [7]
    assert len(read_csv(harness.work / "hate_prompts.csv")) == 7


def test_more_items_than_asked_are_cut_to_the_target(harness, tmp_path):
    def chatty(request):
        n, category, sample = generator_request(request)
        return "\n".join(f"[[{x}]]" for x in generator_items(category, sample, n + 7))

    harness.serve(chatty)
    out = tmp_path / "elsewhere" / "seeds.csv"
    assert harness.run(main, "--category", "deception", "--num_toxic_prompts", "3", "--model", "fake",
                       "--output_path", out) == 0
    df = read_csv(out)
    assert list(df["prompt"]) == generator_items("deception", 0, 3)
    assert runinfo(out)["rows_written"] == 3


def test_numbered_reply_without_brackets_is_read(harness):
    def numbered(request):
        n, category, sample = generator_request(request)
        return "Sure! Here are the prompts you asked for:\n\n" + "\n".join(
            f"{i}. {x}" for i, x in enumerate(generator_items(category, sample, n), 1))

    harness.serve(numbered)
    assert harness.run(main, "--category", "illegal", "--num_toxic_prompts", "4", "--model", "fake") == 0
    assert list(read_csv(harness.work / "illegal_prompts.csv")["prompt"]) == generator_items("illegal", 0, 4)


def test_unreadable_replies_stop_short_with_exit_3(harness, capsys):
    srv = harness.serve(lambda request: "I will not write such prompts.")
    assert harness.run(main, "--category", "sexual", "--num_toxic_prompts", "5", "--model", "fake") == EXIT_ROWS_FAILED
    assert "stopped short of 5" in capsys.readouterr().err
    assert len(chat_requests(srv)) == 3  # three barren waves, then it gives up
    out = harness.work / "sexual_prompts.csv"
    assert list(read_csv(out).columns) == ["prompt", "category"] and len(read_csv(out)) == 0
    assert runinfo(out)["complete"] is False
