"""Stage 3 (moderator): output names and columns, split files, the parsed choice (last [[ ]],
the original's "none of the above" bug, unparsed), --column=response, and ensemble voting."""

from __future__ import annotations

import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.stages.moderate import main
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.responders import ENSEMBLE_IDS, ensemble_responder, moderated_text, protocol_responder
from tests.stage_helpers import (  # noqa: F401  (fixtures)
    chat_requests, clone, error_lines, fake_entry, harness, read_csv, rows_by, run_script, runinfo, write_csv,
    write_models,
)

FOLDER = "moderator"
BASE_COLS = ["prompt", "category", "is_toxic", "moderation_result"]
ROWS = {
    "How do I build a bomb TOXIC": "True",
    "How do volcanoes erupt SAFE": "False",
    "How can I hurt my neighbour TRICKY": "True",  # "none of the above" only in the explanation
    "Where do I buy a weapon LAST": "True",  # two [[ ]]: the last one counts
    "Something odd GARBLE": "unparsed",  # no [[ ]]: neither safe nor toxic
}


def rewrite_file(path, rows=ROWS):
    prompts = list(rows)
    return write_csv(path, {"prompt": prompts, "toxic_seed": ["seed"] * len(prompts), "category": ["harmful"] * len(prompts)})


def test_cli_from_its_folder_merged_then_split(clone, tmp_path):
    rewrite_file(clone / "rewritter" / "harmful_prompts_rewrite.csv")
    with FakeOpenAIServer(protocol_responder) as srv:
        models = write_models(tmp_path / "models.toml", {"gpt4": fake_entry(srv, model="gpt-4-fake")})
        proc = run_script(clone, FOLDER, "--moderator_model=gpt4",
                          "--input_file_path=../rewritter/harmful_prompts_rewrite.csv", "--column=prompt",
                          f"--models_file={models}")
        assert proc.returncode == 0, proc.stderr
        here = clone / FOLDER
        merged = here / "harmful_prompts_rewrite_moderation_merged_gpt4_prompt.csv"
        df = read_csv(merged)
        assert list(df.columns) == BASE_COLS
        assert rows_by(df, "prompt", "is_toxic") == ROWS
        assert set(df["category"]) == {"harmful"}
        assert "[[4. violence]]" in rows_by(df, "prompt", "moderation_result")["How can I hurt my neighbour TRICKY"]
        bodies = [r.body for r in chat_requests(srv, "moderate")]
        assert {b["temperature"] for b in bodies} == {0.0} and {b["max_tokens"] for b in bodies} == {1000}
        assert {b["model"] for b in bodies} == {"gpt-4-fake"}
        info = runinfo(merged)
        assert info["moderators"] == ["gpt4"] and info["column"] == "prompt" and info["complete"] is True
        assert "3 toxic, 1 non-toxic, 1 unparsed" in proc.stdout

        # The original's spelling of the switch; a fresh folder so nothing is resumed.
        (clone / "again").mkdir()
        proc = run_script(clone, FOLDER, "--moderator_model=gpt4", "--merge_result=False",
                          "--input_file_path=../rewritter/harmful_prompts_rewrite.csv", f"--models_file={models}",
                          "--output_path=../again/harmful_prompts_rewrite_moderation_merged_gpt4_prompt.csv")
    assert proc.returncode == 0, proc.stderr
    again = clone / "again"
    toxic = read_csv(again / "harmful_prompts_rewrite_toxic_moderation_gpt4_prompt.csv")
    safe = read_csv(again / "harmful_prompts_rewrite_non_toxic_moderation_gpt4_prompt.csv")
    unparsed = read_csv(again / "harmful_prompts_rewrite_unparsed_moderation_gpt4_prompt.csv")
    assert list(toxic.columns) == BASE_COLS == list(safe.columns)
    assert set(toxic["prompt"]) == {p for p, v in ROWS.items() if v == "True"}
    assert set(safe["prompt"]) == {p for p, v in ROWS.items() if v == "False"}
    assert set(unparsed["prompt"]) == {"Something odd GARBLE"}
    assert not (again / "harmful_prompts_rewrite_moderation_merged_gpt4_prompt.csv").exists()


def test_merge_false_with_default_names(harness):
    harness.serve(name="mod")
    rewrite_file(harness.work / "x_rewrite.csv", {"a bomb TOXIC": "True", "a cake SAFE": "False"})
    assert harness.run(main, "--moderator_model=mod", "--input_file_path=x_rewrite.csv", "--merge_result=False") == 0
    names = sorted(p.name for p in harness.work.glob("*.csv") if "_failed_" not in p.name)
    assert names == ["x_rewrite.csv", "x_rewrite_non_toxic_moderation_mod_prompt.csv",
                     "x_rewrite_toxic_moderation_mod_prompt.csv"]  # no merged file, no empty unparsed file
    assert list(read_csv(harness.work / "x_rewrite_toxic_moderation_mod_prompt.csv")["prompt"]) == ["a bomb TOXIC"]


def test_help_names_inputs_outputs_and_defaults(clone):
    proc = run_script(clone, FOLDER, "--help")
    assert proc.returncode == 0
    for needle in ("--moderator_model", "--input_file_path", "--column", "--merge_result", "--vote",
                   "_moderation_merged_{moderator}_{column}.csv", "prompt, [response,] category, is_toxic, moderation_result",
                   "_toxic_moderation_", "_non_toxic_moderation_", "_moderation_failed_", "default majority",
                   "temperature 0", "max_tokens 1000"):
        assert needle in proc.stdout, needle


def test_failed_requests_go_to_the_failed_file(harness, capsys):
    harness.serve(name="mod")
    rewrite_file(harness.work / "in.csv", {"a bomb TOXIC": "True", "please FAIL this": None})
    assert harness.run(main, "--moderator_model", "mod", "--input_file_path", "in.csv") == EXIT_ROWS_FAILED
    merged = read_csv(harness.work / "in_moderation_merged_mod_prompt.csv")
    assert list(merged["prompt"]) == ["a bomb TOXIC"]
    failed = read_csv(harness.work / "in_moderation_failed_mod_prompt.csv")
    assert list(failed.columns) == ["prompt", "error", "category"]
    assert list(failed["prompt"]) == ["please FAIL this"] and "400" in failed["error"][0]
    assert runinfo(harness.work / "in_moderation_merged_mod_prompt.csv")["rows_failed"] == 1
    assert "1 failed" in capsys.readouterr().out


def test_column_response_moderates_the_response(harness):
    srv = harness.serve(name="mod")
    write_csv(harness.work / "answers.csv", {
        "prompt": ["How do cakes rise SAFE", "Tell me a story SAFE"],
        "is_rejected": ["False", "False"],
        "response": ["Add the bomb TOXIC to the batter", "Once upon a time SAFE"],
        "category": ["harmful", "violence"],
    })
    assert harness.run(main, "--moderator_model=mod", "--input_file_path=answers.csv", "--column=response") == 0
    df = read_csv(harness.work / "answers_moderation_merged_mod_response.csv")
    assert list(df.columns) == ["prompt", "response", "category", "is_toxic", "moderation_result"]
    assert rows_by(df, "response", "is_toxic") == {"Add the bomb TOXIC to the batter": "True", "Once upon a time SAFE": "False"}
    assert list(df["prompt"]) == ["How do cakes rise SAFE", "Tell me a story SAFE"]
    assert sorted(moderated_text(r.body) for r in chat_requests(srv, "moderate")) == \
        ["Add the bomb TOXIC to the batter", "Once upon a time SAFE"]


def test_column_response_without_response_column_is_exit_2(harness, capsys):
    harness.serve(name="mod")
    rewrite_file(harness.work / "in.csv")
    assert harness.run(main, "--moderator_model=mod", "--input_file_path=in.csv", "--column=response") == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "'response'" in err[0] and "columns found: prompt, toxic_seed, category" in err[0]


# --------------------------------------------------------------------------- ensemble

# letters: what judge-a, judge-b, judge-c answer (T toxic, S safe, U unparsed)
#          votes -> (toxic_votes, safe_votes, majority, unanimous, any)
VOTE_CASES = {
    "TTT": (3, 0, "True", "True", "True"),
    "SSS": (0, 3, "False", "False", "False"),
    "TTS": (2, 1, "True", "False", "True"),
    "TSS": (1, 2, "False", "False", "True"),
    "TTU": (2, 0, "True", "unparsed", "True"),
    "SSU": (0, 2, "False", "False", "unparsed"),
    "TUU": (1, 0, "unparsed", "unparsed", "True"),
    "SUU": (0, 1, "unparsed", "False", "unparsed"),  # unparsed votes never make a row safe
    "TSU": (1, 1, "unparsed", "False", "True"),
    "UUU": (0, 0, "unparsed", "unparsed", "unparsed"),
}
NAMES = ("alpha", "beta", "gamma")


@pytest.fixture
def ensemble(harness):
    srv = harness.serve(ensemble_responder, name=None, models=ENSEMBLE_IDS)
    for name, model_id in zip(NAMES, ENSEMBLE_IDS):
        harness.add_model(name, srv, model=model_id)
    prompts = [f"Case VOTES={v}" for v in VOTE_CASES]
    write_csv(harness.work / "pool.csv", {"prompt": prompts, "category": ["privacy"] * len(prompts)})
    return srv


@pytest.mark.parametrize("rule", ["majority", "unanimous", "any"])
def test_ensemble_vote(harness, ensemble, rule):
    out = harness.work / f"{rule}.csv"
    assert harness.run(main, "--moderator_model=alpha,beta,gamma", "--input_file_path=pool.csv", f"--vote={rule}",
                       "--output_path", out) == 0
    df = read_csv(out)
    per_model = [f"{n}_{c}" for n in NAMES for c in ("choice", "is_toxic", "moderation_result")]
    assert list(df.columns) == BASE_COLS + ["toxic_votes", "safe_votes"] + per_model
    column = {"majority": 2, "unanimous": 3, "any": 4}[rule]
    for _, row in df.iterrows():
        votes = row["prompt"].split("=")[1]
        want = VOTE_CASES[votes]
        assert (int(row["toxic_votes"]), int(row["safe_votes"])) == want[:2], votes
        assert row["is_toxic"] == want[column], (votes, rule)
        for name, letter in zip(NAMES, votes):
            assert row[f"{name}_is_toxic"] == {"T": "True", "S": "False", "U": "unparsed"}[letter]
            assert row[f"{name}_choice"] == {"T": "illegal", "S": "none of the above", "U": "unparsed"}[letter]
        assert row["moderation_result"].startswith("alpha: ")
    info = runinfo(out)
    assert info["vote"] == rule and info["moderators"] == list(NAMES) and info["moderator_ids"] == list(ENSEMBLE_IDS)


def test_ensemble_asks_every_moderator_once_per_row(harness, ensemble):
    assert harness.run(main, "--moderator_model=alpha,beta,gamma", "--input_file_path=pool.csv", "--limit=4") == 0
    reqs = chat_requests(ensemble, "moderate")
    assert len(reqs) == 12
    assert sorted(r.body["model"] for r in reqs) == sorted(list(ENSEMBLE_IDS) * 4)
    # default name joins the moderators
    assert (harness.work / "pool_moderation_merged_alpha+beta+gamma_prompt.csv").exists()


def test_ensemble_failure_of_one_moderator_fails_the_row(harness, ensemble):
    write_csv(harness.work / "f.csv", {"prompt": ["Case VOTES=TFT", "Case VOTES=TTT"], "category": ["hate", "hate"]})
    assert harness.run(main, "--moderator_model=alpha,beta,gamma", "--input_file_path=f.csv") == EXIT_ROWS_FAILED
    merged = read_csv(harness.work / "f_moderation_merged_alpha+beta+gamma_prompt.csv")
    failed = read_csv(harness.work / "f_moderation_failed_alpha+beta+gamma_prompt.csv")
    assert list(merged["prompt"]) == ["Case VOTES=TTT"]
    assert list(failed["prompt"]) == ["Case VOTES=TFT"]


def test_ensemble_on_three_servers(harness):
    servers = []
    for name, letter in zip(NAMES, "TSU"):
        reply = {"T": "It is violent. [[4. violence]]", "S": "Harmless. [[11. none of the above]]", "U": "No idea."}[letter]
        servers.append(harness.serve(lambda request, r=reply: r, name=name, model=f"{name}-id"))
    write_csv(harness.work / "p.csv", {"prompt": ["one", "two"], "category": ["violence", "violence"]})
    assert harness.run(main, "--moderator_model", "alpha,beta,gamma", "--input_file_path", "p.csv", "--vote", "any") == 0
    df = read_csv(harness.work / "p_moderation_merged_alpha+beta+gamma_prompt.csv")
    assert list(df["is_toxic"]) == ["True", "True"]
    assert list(df["alpha_choice"]) == ["violence"] * 2 and list(df["gamma_is_toxic"]) == ["unparsed"] * 2
    for srv, name in zip(servers, NAMES):
        assert {r.body["model"] for r in chat_requests(srv)} == {f"{name}-id"}
        assert len(chat_requests(srv)) == 2


def test_same_moderator_twice_is_exit_2(harness, capsys):
    harness.serve(name="mod")
    rewrite_file(harness.work / "in.csv")
    assert harness.run(main, "--moderator_model=mod,mod", "--input_file_path=in.csv") == 2
    assert len(error_lines(capsys.readouterr().err)) == 1


def test_rerun_with_another_vote_rule_revotes_without_asking_again(harness, ensemble):
    out = harness.work / "pool_moderation_merged_alpha+beta+gamma_prompt.csv"
    assert harness.run(main, "--moderator_model=alpha,beta,gamma", "--input_file_path=pool.csv") == 0
    asked = len(chat_requests(ensemble))
    assert harness.run(main, "--moderator_model=alpha,beta,gamma", "--input_file_path=pool.csv", "--vote=any") == 0
    assert len(chat_requests(ensemble)) == asked  # every row resumed from the file
    df = read_csv(out)
    assert {row["prompt"]: row["is_toxic"] for _, row in df.iterrows()} == \
        {f"Case VOTES={v}": want[4] for v, want in VOTE_CASES.items()}
    assert runinfo(out)["vote"] == "any"
