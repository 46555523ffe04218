"""Stage 5: a judged random sample (--sample/--seed) and an ensemble of judges (--vote)."""

from __future__ import annotations

import re

import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.stages.check_response import main
from orbench.testing.fake_openai import Status
from tests.responders import ENSEMBLE_IDS, audit_labels, judge_reply, judged_pair, knowing_audit_reply, passes_audit, stage_of
from tests.stage_helpers import (  # noqa: F401  (fixtures)
    chat_requests, error_lines, harness, read_csv, runinfo, write_csv,
)

COLS = ["prompt", "answer_category", "answer_type_response", "response", "category", "is_rejected"]
SAMPLE_COLS = COLS + ["inclusion_probability"]  # a judged sample carries each row's chance of being drawn


def stage4(path, n_scored, unscored=("empty", "filtered")):
    """n_scored rows with a keyword verdict, plus rows stage 4 could not score."""
    prompts = [f"question {i}" for i in range(n_scored)] + [f"blank {s}" for s in unscored]
    return write_csv(path, {
        "prompt": prompts,
        "is_rejected": [("True" if i % 3 == 0 else "False") for i in range(n_scored)] + list(unscored),
        "response": [("I'm sorry, no." if i % 3 == 0 else f"Answer {i}.") for i in range(n_scored)]
                    + [""] * len(unscored),
        "category": ["hate"] * len(prompts),
    })


def judged(path):
    return list(read_csv(path)["prompt"])


# ------------------------------------------------------------------ the sample


def test_sample_is_uniform_over_scored_rows_and_repeatable(harness):
    srv = harness.serve()
    stage4(harness.work / "m_merged_x.csv", 40)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=7", "--seed=3") == 0
    first = judged(out)
    assert len(first) == 7 and all(p.startswith("question ") for p in first)  # never a blank row
    order = [f"question {i}" for i in range(40)]
    assert first == sorted(first, key=order.index)  # input order
    assert len(chat_requests(srv, "judge")) == 7
    df = read_csv(out)
    assert list(df.columns) == SAMPLE_COLS
    assert set(df["inclusion_probability"]) == {str(7 / 40)}  # uniform: n / N on every row
    # stage 4's verdict of each judged row rides along
    assert all(v == ("True" if int(p.split()[1]) % 3 == 0 else "False")
               for p, v in zip(df["prompt"], df["is_rejected"]))
    info = runinfo(out)
    assert info["sample_size"] == 7 and info["sample_seed"] == 3
    assert info["population_rows"] == 40 and info["sampled_rows"] == 7
    assert info["input_file"] == "m_merged_x.csv"
    assert info["input_path"] == str((harness.work / "m_merged_x.csv").resolve())

    # The same N and seed in a fresh folder: the same rows. Another seed: other rows.
    (harness.work / "again").mkdir()
    stage4(harness.work / "again" / "m_merged_x.csv", 40)
    assert harness.run(main, "--check_model=fake", "--input_file=again/m_merged_x.csv", "--sample=7", "--seed=3",
                       "--output_path=again/out.csv") == 0
    assert judged(harness.work / "again" / "out.csv") == first
    assert harness.run(main, "--check_model=fake", "--input_file=again/m_merged_x.csv", "--sample=7", "--seed=4",
                       "--output_path=again/other.csv") == 0
    assert judged(harness.work / "again" / "other.csv") != first


def test_sample_draws_every_row_about_equally_often():
    # Over 400 seeds, a sample of 10 of 40 holds each row 100 times on average; a row
    # that is never or always chosen (a biased rank) would be far off.
    from orbench.tables.sampling import draw

    hits = [0] * 40
    for seed in range(400):
        for i in draw([f"key{i}" for i in range(40)], 10, seed).chosen:
            hits[i] += 1
    assert sum(hits) == 4000 and 65 < min(hits) and max(hits) < 135


def test_growing_the_sample_keeps_its_rows_and_asks_only_for_the_new_ones(harness):
    srv = harness.serve()
    stage4(harness.work / "m_merged_x.csv", 30)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=5", "--no_cache") == 0
    small = judged(out)
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=9", "--no_cache") == 0
    big = judged(out)
    assert set(small) < set(big) and len(big) == 9
    assert len(chat_requests(srv, "judge")) == 9  # 5, then only the 4 new rows
    # Another seed: the file holds exactly the new sample (no rows left from the old one).
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=5", "--seed=9",
                       "--no_cache") == 0
    fresh = harness.work / "fresh"
    fresh.mkdir()
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=5", "--seed=9",
                       f"--output_path={fresh / 'o.csv'}") == 0
    assert judged(out) == judged(fresh / "o.csv")
    assert runinfo(out)["sampled_rows"] == 5 and runinfo(out)["rows_written"] == 5


def test_a_resumed_sample_ends_with_the_rows_of_an_uninterrupted_run(harness):
    down = {"on": True}

    def flaky(request):
        question, _ = judged_pair(request)
        if down["on"] and question.endswith(("1", "4", "7")):
            return Status(400, message="judge down for this one")
        return "Fine. [[direct_answer]]"

    harness.serve(passes_audit(flaky))
    stage4(harness.work / "m_merged_x.csv", 30)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    args = ("--check_model=fake", "--input_file=m_merged_x.csv", "--sample=12", "--seed=5")
    assert harness.run(main, *args) == EXIT_ROWS_FAILED
    failed = harness.work / "m_merged_x_response_check_failed_fake.csv"
    first_ok, first_failed = judged(out), judged(failed)
    assert first_failed and len(first_ok) + len(first_failed) == 12
    down["on"] = False
    assert harness.run(main, *args) == 0
    (harness.work / "clean").mkdir()
    assert harness.run(main, *args, f"--output_path={harness.work / 'clean' / 'o.csv'}") == 0
    assert judged(out) == judged(harness.work / "clean" / "o.csv")
    assert sorted(judged(out)) == sorted(first_ok + first_failed)


def test_sample_larger_than_the_file_takes_every_scored_row(harness):
    harness.serve()
    stage4(harness.work / "m_merged_x.csv", 6)
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=1000") == 0
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert judged(out) == [f"question {i}" for i in range(6)]
    info = runinfo(out)
    assert (info["sample_size"], info["population_rows"], info["sampled_rows"]) == (1000, 6, 6)


def test_sample_with_no_scored_rows_writes_an_empty_sample_and_says_so(harness, capsys):
    srv = harness.serve()
    stage4(harness.work / "m_merged_x.csv", 0, unscored=("empty", "filtered", "empty"))
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=50") == 0
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert list(read_csv(out).columns) == SAMPLE_COLS and judged(out) == []
    assert chat_requests(srv, "judge") == []
    info = runinfo(out)
    assert (info["population_rows"], info["sampled_rows"], info["complete"]) == (0, 0, True)
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "nothing to sample" in err[0]


def test_without_is_rejected_the_sample_is_drawn_from_rows_with_a_response(harness, capsys):
    harness.serve()
    write_csv(harness.work / "plain.csv", {"prompt": ["a", "b", "c", "d"], "response": ["yes", "", "no", "ok"],
                                           "category": ["x"] * 4})
    assert harness.run(main, "--check_model=fake", "--input_file=plain.csv", "--sample=10") == 0
    df = read_csv(harness.work / "plain_response_check_merged_fake.csv")
    assert list(df["prompt"]) == ["a", "c", "d"] and "is_rejected" not in df.columns
    out = capsys.readouterr().out
    assert "random sample of 3 of its 3 scored rows" in out and "sample only" in out


# ------------------------------------------------------------------ the ensemble

# Letter i of JUDGES= in the response is judge i's answer: A answer, R direct refusal,
# I indirect refusal, U unreadable, F the call fails (HTTP 400).
REPLIES = {"A": "It answers. [[direct_answer]]", "R": "It declines. [[direct_refusal]]",
           "I": "It only points elsewhere. [[indirect_refusal]]", "U": "Hard to say."}
NAMES = ("alpha", "beta", "gamma")
CLASS = {"A": "direct_answer", "R": "direct_refusal", "I": "indirect_refusal", "U": "unscored", "F": "failed"}

# letters -> (refusal votes, answer votes, majority, unanimous, any)
VOTE_CASES = {
    "AAA": (0, 3, "direct_answer", "direct_answer", "direct_answer"),
    "RRR": (3, 0, "direct_refusal", "direct_refusal", "direct_refusal"),
    "RIA": (2, 1, "direct_refusal", "direct_answer", "direct_refusal"),  # a 1-1 class tie: direct
    "IIA": (2, 1, "indirect_refusal", "direct_answer", "indirect_refusal"),
    "RAA": (1, 2, "direct_answer", "direct_answer", "direct_refusal"),
    "RAU": (1, 1, "unscored", "direct_answer", "direct_refusal"),  # U sits out: a 1-1 tie
    "RRF": (2, 0, "direct_refusal", "direct_refusal", "direct_refusal"),  # F sits out
    "AUF": (0, 1, "direct_answer", "direct_answer", "direct_answer"),
    "UUA": (0, 1, "direct_answer", "direct_answer", "direct_answer"),
    "UUU": (0, 0, "unscored", "unscored", "unscored"),
}


def ensemble_judge(request):
    if stage_of(request) == "audit":  # the judge audit's rows: a judge that passes it
        return knowing_audit_reply(request, audit_labels())
    _, response = judged_pair(request)
    letters = re.search(r"JUDGES=([ARIUF]+)", response).group(1)
    letter = letters[ENSEMBLE_IDS.index(request["model"])]
    return Status(400, message="this judge is down") if letter == "F" else REPLIES[letter]


@pytest.fixture
def ensemble(harness):
    srv = harness.serve(ensemble_judge, name=None, models=ENSEMBLE_IDS)
    for name, model_id in zip(NAMES, ENSEMBLE_IDS):
        harness.add_model(name, srv, model=model_id)
    cases = list(VOTE_CASES) + ["FFF"]
    write_csv(harness.work / "r.csv", {"prompt": [f"q{i}" for i in range(len(cases))],
                                       "response": [f"reply JUDGES={c}" for c in cases],
                                       "category": ["hate"] * len(cases)})
    return srv


def letters_of(row):
    return row["response"].split("=")[1]


@pytest.mark.parametrize("rule", ["majority", "unanimous", "any"])
def test_ensemble_vote_and_per_judge_columns(harness, ensemble, rule):
    out = harness.work / f"{rule}.csv"
    assert harness.run(main, "--check_model=alpha,beta,gamma", "--input_file=r.csv", f"--vote={rule}",
                       f"--output_path={out}") == EXIT_ROWS_FAILED
    df = read_csv(out)
    per_judge = [f"{n}_{c}" for n in NAMES for c in ("answer_category", "answer_type_response")]
    assert list(df.columns) == COLS[:5] + ["refusal_votes", "answer_votes", "judges_voted"] + per_judge
    column = {"majority": 2, "unanimous": 3, "any": 4}[rule]
    for _, row in df.iterrows():
        letters = letters_of(row)
        want = VOTE_CASES[letters]
        assert (int(row["refusal_votes"]), int(row["answer_votes"])) == want[:2], letters
        assert int(row["judges_voted"]) == sum(want[:2])
        assert row["answer_category"] == want[column], (letters, rule)
        for name, letter in zip(NAMES, letters):
            assert row[f"{name}_answer_category"] == CLASS[letter]
            if letter == "F":
                assert "400" in row[f"{name}_answer_type_response"]
            else:
                assert row[f"{name}_answer_type_response"] == REPLIES[letter]
    # every judge failed: a failed row, never a verdict
    assert "reply JUDGES=FFF" not in set(df["response"])
    failed = read_csv(harness.work / f"{rule}_failed.csv")
    assert list(failed["response"]) == ["reply JUDGES=FFF"] and "every judge failed" in failed["error"][0]
    info = runinfo(out)
    assert info["vote"] == rule and info["check_models"] == list(NAMES) and info["model_id"] == list(ENSEMBLE_IDS)
    assert info["judge_calls_failed"] == 2 and info["rows_failed"] == 1


def test_ensemble_agreement_and_kappa_by_hand(harness, ensemble, capsys):
    assert harness.run(main, "--check_model=alpha,beta,gamma", "--input_file=r.csv") == EXIT_ROWS_FAILED
    # Refusal 1 / answer 0 / no verdict -, case by case (AAA RRR RIA IIA RAA RAU RRF AUF UUA UUU):
    #   alpha: 0 1 1 1 1 1 1 0 - -
    #   beta:  0 1 1 1 0 0 1 - - -
    # Both scored on the first 7; they agree on 5 (not RAA, RAU). alpha: six 1s, one 0;
    # beta: four 1s, three 0s. p_o = 5/7 = 35/49, p_e = (6*4 + 1*3)/49 = 27/49,
    # kappa = (35 - 27) / (49 - 27) = 8/22.
    info = runinfo(harness.work / "r_response_check_merged_alpha+beta+gamma.csv")
    ab = next(p for p in info["judge_agreement"] if (p["first"], p["second"]) == ("alpha", "beta"))
    assert ab["rows"] == 7
    assert ab["agreement_pct"] == pytest.approx(100 * 5 / 7)
    assert ab["kappa"] == pytest.approx(8 / 22)
    assert [(p["first"], p["second"]) for p in info["judge_agreement"]] == \
        [("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")]
    out = capsys.readouterr().out
    assert "alpha vs beta: 71.4% agree over 7 rows, Cohen's kappa 0.364" in out


def test_rerun_with_another_vote_rule_revotes_without_asking_again(harness, ensemble):
    out = harness.work / "r_response_check_merged_alpha+beta+gamma.csv"
    assert harness.run(main, "--check_model=alpha,beta,gamma", "--input_file=r.csv") == EXIT_ROWS_FAILED
    asked = len(chat_requests(ensemble))
    assert harness.run(main, "--check_model=alpha,beta,gamma", "--input_file=r.csv", "--vote=any") == EXIT_ROWS_FAILED
    # only the all-failed row is asked again (it is still failing)
    assert len(chat_requests(ensemble)) == asked + 3
    got = {letters_of(r): r["answer_category"] for _, r in read_csv(out).iterrows()}
    assert got == {k: v[4] for k, v in VOTE_CASES.items()}
    assert runinfo(out)["vote"] == "any"


def test_same_judge_twice_is_exit_2(harness, capsys):
    harness.serve()
    write_csv(harness.work / "r.csv", {"prompt": ["q"], "response": ["a"]})
    assert harness.run(main, "--check_model=fake,fake", "--input_file=r.csv") == 2
    assert len(error_lines(capsys.readouterr().err)) == 1


def test_sample_with_limit_is_one_line_exit_2(harness, capsys):
    srv = harness.serve()
    stage4(harness.work / "m_merged_x.csv", 10)
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=3", "--limit=5") == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "--limit" in err[0] and chat_requests(srv) == []
